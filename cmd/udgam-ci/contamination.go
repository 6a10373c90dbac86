package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/evals/contamination"
	"github.com/udgamlabs/udgam-ci/evals/fresh"
	"github.com/udgamlabs/udgam-ci/hub"
	"github.com/udgamlabs/udgam-ci/internal/atomicfile"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// stringList is a flag that may be repeated and takes commas.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*s = append(*s, p)
		}
	}
	return nil
}

type contaminationScanOptions struct {
	Train       []string
	Tests       string
	Data        string
	Items       string
	N           int
	Out         string
	TextField   string
	MinFraction float64
	Shard       string
	Workers     int
	Resume      bool
	Force       bool
	JSON        bool
	// AllowMissing scans past records without the text field, and
	// AllowEmpty writes a report that read no text; both refuse otherwise.
	AllowMissing, AllowEmpty bool
	// Fetch turns an hf:// Fresh Text reference into a local file.
	Fetch func(ref string) (evals.Fetched, error)
}

func runContaminationScan(e *env, args []string) error {
	o := contaminationScanOptions{Fetch: fetchFromHub(e, freshDataName)}
	fs := newFlags(e, "contamination scan",
		"find the test items whose word n-grams occur in training data: the test items are indexed, the training text is streamed once (JSON Lines, Parquet, text; gzip or zstd; folders, globs, hf:// datasets)",
		"udgam-ci contamination scan --train corpus/ --train hf://acme/mix@COMMIT --out contamination.json")
	var train stringList
	fs.Var(&train, "train", "training data: a file, folder, glob or hf://OWNER/NAME@COMMIT[/path] (repeat or separate with commas)")
	fs.StringVar(&o.Tests, "tests", "fresh,probes", "test sets to check: fresh, probes or both")
	fs.StringVar(&o.Data, "data", "", "Fresh Text documents, as for score fresh (default: the embedded smoke sample)")
	fs.StringVar(&o.Items, "items", "", "probe items, as for score probes (default: the embedded core set)")
	fs.IntVar(&o.N, "n", contamination.DefaultN, "n-gram length in words")
	fs.StringVar(&o.Out, "out", "", "report to write (JSON)")
	fs.StringVar(&o.TextField, "text-field", "text", "JSON key or Parquet column holding the training text")
	fs.Float64Var(&o.MinFraction, "min-fraction", 0, "also count the items with more than this fraction of their n-grams found (0 to 1)")
	fs.StringVar(&o.Shard, "shard", "", "scan shard i/n of the training files (for a job matrix; join with contamination merge)")
	fs.IntVar(&o.Workers, "workers", 0, "files scanned at once (default: all cores)")
	fs.BoolVar(&o.Resume, "resume", false, "skip the files an interrupted scan with the same --out finished")
	fs.BoolVar(&o.Force, "force", false, "overwrite OUT if it exists")
	fs.BoolVar(&o.JSON, "json", false, "print the report's summary as JSON on stdout")
	fs.BoolVar(&o.AllowMissing, "allow-missing", false, "scan the records that have the text field and count the others (refused otherwise: text under another field is not read)")
	fs.BoolVar(&o.AllowEmpty, "allow-empty", false, "write the report even when the training data held no text (refused otherwise)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{fmt.Errorf("unexpected argument %q (training data goes in --train)", pos[0])}
	}
	o.Train = train
	return contaminationScan(e, o)
}

func contaminationScan(e *env, o contaminationScanOptions) error {
	switch {
	case len(o.Train) == 0:
		return usageError{errors.New("--train: name the training data")}
	case o.Out == "":
		return usageError{errors.New("--out: name the report file")}
	case o.N < contamination.MinWords:
		return usageError{fmt.Errorf("--n %d: want at least %d", o.N, contamination.MinWords)}
	case o.MinFraction < 0 || o.MinFraction >= 1:
		return usageError{fmt.Errorf("--min-fraction %g: want 0 <= f < 1", o.MinFraction)}
	case o.Workers < 0:
		return usageError{fmt.Errorf("--workers %d: want 0 (all cores) or more", o.Workers)}
	}
	var si, sn int
	if o.Shard != "" {
		s, err := evals.ParseShard(o.Shard)
		if err != nil {
			return usageError{err}
		}
		si, sn = s.Index, s.Count
	}
	state := o.Out + ".state"
	if err := refuseOverwrite(o.Out, o.Force || o.Resume); err != nil {
		return err
	}
	items, tests, err := contaminationTests(e, o.Tests, o.Data, o.Items, o.Fetch)
	if err != nil {
		return err
	}
	ix, err := contamination.NewIndex(items, o.N)
	if err != nil {
		return err
	}
	var inputs []contamination.Input
	var local []string
	client := hub.New(e.Getenv)
	client.Progress = e.Stderr
	for _, t := range o.Train {
		if !hub.IsRef(t) {
			local = append(local, t)
			continue
		}
		in, err := contamination.HubInputs(e.Ctx, client, t)
		if err != nil {
			return err
		}
		inputs = append(inputs, in...)
	}
	if len(local) > 0 {
		in, skipped, err := contamination.LocalInputs(local)
		if err != nil {
			return err
		}
		if len(skipped) > 0 {
			fmt.Fprintf(e.Stderr, "skipping %d files of other kinds, such as %s\n", len(skipped), skipped[0])
		}
		inputs = append(inputs, in...)
	}
	fmt.Fprintf(e.Stderr, "indexed %d test items (%d-grams); scanning %d training files\n", ix.Len(), o.N, len(inputs))
	r, err := contamination.Scan(e.Ctx, ix, inputs, contamination.Options{
		TextField: o.TextField, Workers: o.Workers, MinFraction: o.MinFraction,
		ShardIndex: si, ShardCount: sn, State: state, Resume: o.Resume,
		Progress: e.Stderr, ProgressTerminal: evals.IsTerminal(e.Stderr), Tests: tests,
	})
	if err != nil {
		if e.Ctx.Err() != nil {
			return fmt.Errorf("%w (finished files are kept in %s: rerun with --resume)", err, state)
		}
		return err
	}
	warnings, err := r.CheckRead(o.AllowMissing, o.AllowEmpty)
	for _, w := range warnings {
		fmt.Fprintf(e.Stderr, "warning: %s\n", w)
	}
	if err != nil {
		// The scan is complete but its reading is refused: it must not be
		// resumed as if it were right, nor its report used.
		os.Remove(state)
		return fmt.Errorf("%w (no report written; --text-field names the field that holds the text, --allow-missing and --allow-empty accept this)", err)
	}
	return writeContamination(e, o.Out, r, o.JSON, state)
}

// contaminationTests loads the test sets a scan or merge checks.
func contaminationTests(e *env, which, data, items string, fetch func(string) (evals.Fetched, error)) ([]contamination.Item, map[string]contamination.TestSet, error) {
	var out []contamination.Item
	tests := map[string]contamination.TestSet{}
	for _, t := range strings.Split(which, ",") {
		switch strings.TrimSpace(t) {
		case "fresh":
			d, err := fresh.Load(data, fetch)
			if err != nil {
				return nil, nil, err
			}
			out = append(out, contamination.FreshItems(d)...)
			tests["fresh"] = testSet(d.Dataset)
		case "probes":
			set, err := loadProbeItems(e, items)
			if err != nil {
				return nil, nil, err
			}
			out = append(out, contamination.ProbeItems(set)...)
			tests["probes"] = contamination.TestSet{Name: set.Name, Revision: set.Revision, SHA256: set.SHA256, Count: len(set.Items)}
		default:
			return nil, nil, usageError{fmt.Errorf("--tests %q: want fresh, probes or fresh,probes", which)}
		}
	}
	return out, tests, nil
}

func testSet(d runfile.Dataset) contamination.TestSet {
	return contamination.TestSet{Name: d.Name, Revision: d.Revision, SHA256: d.SHA256, Count: d.Count}
}

func writeContamination(e *env, out string, r *contamination.Report, asJSON bool, state string) error {
	if err := atomicfile.Write(out, r.Encode); err != nil {
		return err
	}
	if state != "" {
		os.Remove(state) // the report now holds everything it did
	}
	if asJSON {
		enc := json.NewEncoder(e.Stdout)
		return enc.Encode(map[string]any{"report": out, "n": r.N, "words": r.Words, "bytes": r.Bytes,
			"files": len(r.Train), "summary": r.Summary, "line": r.Line()})
	}
	if err := r.WriteText(e.Stdout); err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "\nreport: %s\n", out)
	return nil
}

type contaminationMergeOptions struct {
	Out     string
	Reports []string
	Tests   string
	Data    string
	Items   string
	Force   bool
	JSON    bool
	Fetch   func(ref string) (evals.Fetched, error)
}

func runContaminationMerge(e *env, args []string) error {
	o := contaminationMergeOptions{Fetch: fetchFromHub(e, freshDataName)}
	fs := newFlags(e, "contamination merge",
		"join the reports of a scan's shards (--shard i/n) into one; the test sets must be the ones they were scanned against",
		"udgam-ci contamination merge contamination.json shard-1.json shard-2.json")
	fs.StringVar(&o.Tests, "tests", "fresh,probes", "test sets the shards checked")
	fs.StringVar(&o.Data, "data", "", "Fresh Text documents the shards checked")
	fs.StringVar(&o.Items, "items", "", "probe items the shards checked")
	fs.BoolVar(&o.Force, "force", false, "overwrite OUT if it exists")
	fs.BoolVar(&o.JSON, "json", false, "print the summary as JSON on stdout")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return usageError{errors.New("want OUT.json and at least one shard report")}
	}
	o.Out, o.Reports = pos[0], pos[1:]
	return contaminationMerge(e, o)
}

func contaminationMerge(e *env, o contaminationMergeOptions) error {
	if err := refuseOverwrite(o.Out, o.Force); err != nil {
		return err
	}
	var reports []*contamination.Report
	for _, p := range o.Reports {
		if p == o.Out {
			return fmt.Errorf("%s is both the output and a shard report", p)
		}
		r, err := contamination.ReadReport(p)
		if err != nil {
			return err
		}
		reports = append(reports, r)
	}
	items, _, err := contaminationTests(e, o.Tests, o.Data, o.Items, o.Fetch)
	if err != nil {
		return err
	}
	ix, err := contamination.NewIndex(items, reports[0].N)
	if err != nil {
		return err
	}
	merged, err := contamination.Merge(ix, reports)
	if err != nil {
		return err
	}
	return writeContamination(e, o.Out, merged, o.JSON, "")
}
