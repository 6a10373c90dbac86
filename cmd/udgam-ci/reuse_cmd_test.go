package main

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/evals/fresh"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// A model unchanged from the baseline's (the same tensors and tokenizer,
// only its name differs) takes the baseline run's records instead of being
// scored, through the real engine: with --reuse-if-unchanged and with
// --until decided's --baseline. One tensor changed, or one setting, and it
// is scored. The baseline's file is altered after scoring, so a record
// that was scored again cannot pass for a reused one.
func TestScoreReuseIfUnchanged(t *testing.T) {
	t.Parallel()
	needEngine(t)
	dir := t.TempDir()
	b := testmodel.RandomBigram(8)
	table := b.Table()
	table['e']['a'], table['e']['b'] = table['e']['b'], table['e']['a']
	changed, err := testmodel.NewBigram(table)
	if err != nil {
		t.Fatal(err)
	}
	models := map[string]string{}
	for name, write := range map[string]func(string) error{
		"base": func(p string) error { return testmodel.WriteBigramGGUF(p, b) },
		"renamed": func(p string) error {
			return testmodel.WriteBigramGGUF(p, b, testmodel.WithName("bigram, retrained on nothing new"))
		},
		"changed": func(p string) error { return testmodel.WriteBigramGGUF(p, changed) },
	} {
		models[name] = filepath.Join(dir, name+".gguf")
		if err := write(models[name]); err != nil {
			t.Fatal(err)
		}
	}
	docs := fresh.GenerateDocs(5, 14, 200, 2000)
	data := writeDocs(t, dir, docs)
	setBytes := 0
	for _, d := range docs {
		setBytes += len(d.Text)
	}
	score := func(name, out string, more ...string) (fresh.Summary, string) {
		t.Helper()
		e, stdout, stderr := freshTestEnv()
		args := append([]string{"score", "fresh", "--model", models[name], "--data", data, "--out", out,
			"--window", "64", "--stride", "32", "--threads", "1", "--json"}, more...)
		if code := run(e, args); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
		var sum fresh.Summary
		if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
			t.Fatalf("--json output %q: %v", stdout.String(), err)
		}
		return sum, stderr.String()
	}
	read := func(path string) *runfile.Run {
		t.Helper()
		r, err := runfile.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	basePath := filepath.Join(dir, "base.jsonl")
	score("base", basePath)
	base := read(basePath)
	base.Docs[0].Bits += 1
	if err := runfile.WriteFile(basePath, base); err != nil {
		t.Fatal(err)
	}

	for _, how := range [][]string{
		{"--reuse-if-unchanged", basePath},
		{"--until", "decided", "--baseline", basePath},
	} {
		out := filepath.Join(t.TempDir(), "head.jsonl")
		sum, stderr := score("renamed", out, how...)
		head := read(out)
		line := "unchanged model: records reused from run " + base.Header.ID + ", no scoring"
		if r := head.Header.Reused; r == nil || r.From != base.Header.ID || r.Fingerprint != base.Header.Model.Fingerprint || sum.Reused == nil {
			t.Fatalf("%v: header reused %+v, summary %+v; stderr:\n%s", how, head.Header.Reused, sum.Reused, stderr)
		}
		if !reflect.DeepEqual(byID(head.Docs), byID(base.Docs)) || head.Header.Sequential != nil || !strings.Contains(stderr, line) {
			t.Errorf("%v: records differ from the baseline's, or sequential %+v, or stderr lacks %q:\n%s", how, head.Header.Sequential, line, stderr)
		}
		if head.Header.Model.Name == base.Header.Model.Name || head.Header.Model.SHA256 == base.Header.Model.SHA256 {
			t.Errorf("%v: the head's header names the baseline's model %+v", how, head.Header.Model)
		}
		e, stdout, errb := freshTestEnv()
		if code := run(e, []string{"compare", basePath, out}); code != 0 || !strings.Contains(stdout.String(), line) || !strings.Contains(stdout.String(), "no change") {
			t.Errorf("%v: compare: exit %d\n%s%s", how, code, stdout.String(), errb.String())
		}
	}

	for _, tc := range []struct {
		name, why string
		more      []string
	}{
		{"changed", "fingerprint differs", nil},
		{"renamed", "window: 64 -> 128", []string{"--window", "128"}},
		{"renamed", "add_bos: true -> false", []string{"--add-bos", "no"}},
	} {
		out := filepath.Join(t.TempDir(), "head.jsonl")
		_, stderr := score(tc.name, out, append([]string{"--reuse-if-unchanged", basePath}, tc.more...)...)
		head := read(out)
		if head.Header.Reused != nil || head.Docs[0].Bits == base.Docs[0].Bits || !strings.Contains(stderr, tc.why) {
			t.Errorf("%s %v: reused %+v, first document's bits %g (the baseline's altered %g); stderr lacks %q:\n%s",
				tc.name, tc.more, head.Header.Reused, head.Docs[0].Bits, base.Docs[0].Bits, tc.why, stderr)
		}
	}

	// The Probe Suite's runs are reused alike.
	items := generateItems(t, dir, 5)
	probes := func(name, out string, more ...string) string {
		t.Helper()
		e, _, stderr := freshTestEnv()
		args := append([]string{"score", "probes", "--model", models[name], "--items", items, "--out", out, "--threads", "1"}, more...)
		if code := run(e, args); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
		return stderr.String()
	}
	probesBase := filepath.Join(dir, "probes-base.jsonl")
	probes("base", probesBase)
	pb := read(probesBase)
	pb.Items[0].Logprobs[0] -= 1
	if err := runfile.WriteFile(probesBase, pb); err != nil {
		t.Fatal(err)
	}
	for name, reused := range map[string]bool{"renamed": true, "changed": false} {
		out := filepath.Join(t.TempDir(), "probes-head.jsonl")
		stderr := probes(name, out, "--reuse-if-unchanged", probesBase)
		ph := read(out)
		if got := ph.Header.Reused != nil && reflect.DeepEqual(ph.Items, pb.Items); got != reused {
			t.Errorf("probes, %s model: reused %v (header %+v), want %v:\n%s", name, got, ph.Header.Reused, reused, stderr)
		}
	}

	// A sequential run of the changed model says what share of the set's
	// bytes it scored, in --json and on stderr.
	out := filepath.Join(t.TempDir(), "seq.jsonl")
	sum, stderr := score("changed", out, "--until", "decided", "--baseline", basePath, "--budget", "3")
	head := read(out)
	// The run samples the baseline's spans: each span record holds its
	// share of its document's bytes (runfile.SpanBytes), whole records
	// their text.
	scored := 0
	for _, d := range head.Docs {
		if d.Of != "" {
			scored += d.Bytes
			continue
		}
		for _, doc := range docs {
			if doc.ID == d.ID {
				scored += len(doc.Text)
			}
		}
	}
	c := sum.Cost
	if c == nil || c.Records != head.Len() || c.TotalRecords != head.Header.Sequential.Total || c.Bytes != int64(scored) || c.TotalBytes != int64(setBytes) || head.Header.Sequential.Bytes != int64(setBytes) {
		t.Fatalf("--json cost %+v, want %d of %d records, %d of %d bytes", c, head.Len(), head.Header.Sequential.Total, scored, setBytes)
	}
	if want := c.Phrase(); scored == setBytes || !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q (or the run scored every byte):\n%s", want, stderr)
	}
}

func byID(docs []runfile.Doc) map[string]runfile.Doc {
	m := map[string]runfile.Doc{}
	for _, d := range docs {
		m[d.ID] = d
	}
	return m
}
