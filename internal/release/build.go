package release

import "runtime/debug"

// Build names this build's code: Version, and the commit it was built
// from where Go recorded one (a build inside a git checkout), "+dirty"
// when the checkout had changes. A fix that changes scores without a new
// Version still changes it, so what is cached by it (the Action's
// baseline runs) is not reused across such a fix.
func Build() string {
	b := Version
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev != "" {
		b += "+" + rev + dirty
	}
	return b
}
