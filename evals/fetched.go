package evals

// Fetched is a hub reference turned into a local, verified file: what
// fresh.Load and probes.Load get back from the fetch function a command
// passes them.
type Fetched struct {
	Path     string // the local file
	Name     string // what the run header calls the data, e.g. OWNER/NAME/test.jsonl
	Revision string // the commit it came from
}
