package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/evals/contamination"
	"github.com/udgamlabs/udgam-ci/evals/fresh"
	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
)

func TestContaminationScanAndMergeCommands(t *testing.T) {
	t.Parallel()
	core, err := probes.Core()
	if err != nil {
		t.Fatal(err)
	}
	smoke, err := fresh.Smoke()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	train := filepath.Join(dir, "train")
	os.Mkdir(train, 0o755)
	// Two shards of training text: one copies a probe item in upper case,
	// the other a stretch of a smoke document.
	it := core.Items[123]
	doc := smoke.Docs[4]
	words := strings.Fields(doc.Text)
	lines := []string{
		fmt.Sprintf(`{"text": %q}`, "some text. "+strings.ToUpper(it.Prompt+" "+it.Answer)+" more text"),
		fmt.Sprintf(`{"text": %q}`, "unrelated words here"),
	}
	os.WriteFile(filepath.Join(train, "a.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	os.WriteFile(filepath.Join(train, "b.txt"), []byte("x y\n"+strings.Join(words[10:40], " ")+"\n"), 0o644)

	out := filepath.Join(dir, "report.json")
	e, stdout, stderr := freshTestEnv()
	if code := run(e, []string{"contamination", "scan", "--train", train, "--out", out}); code != 0 {
		t.Fatalf("scan: exit %d: %s", code, stderr)
	}
	want := "Contamination: 1 of 2,000 probe items, 1 of 30 Fresh Text documents share a 13-gram with the training data"
	if !strings.Contains(stdout.String(), want) || !strings.Contains(stdout.String(), "probes "+it.ID+": 1/") {
		t.Errorf("stdout:\n%s\nwant %q and the item", stdout, want)
	}
	r, err := contamination.ReadReport(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Contaminated("fresh", 0); len(got) != 1 || got[0] != doc.ID {
		t.Errorf("fresh contaminated %v, want [%s]", got, doc.ID)
	}
	if _, err := os.Stat(out + ".state"); !os.IsNotExist(err) {
		t.Errorf("state file left after a finished scan: %v", err)
	}

	// Two shards merge to the same items.
	var shards []string
	for i := 1; i <= 2; i++ {
		p := filepath.Join(dir, fmt.Sprintf("shard-%d.json", i))
		e, _, stderr := freshTestEnv()
		if code := run(e, []string{"contamination", "scan", "--train", train, "--shard", fmt.Sprintf("%d/2", i), "--out", p}); code != 0 {
			t.Fatalf("shard %d: exit %d: %s", i, code, stderr)
		}
		shards = append(shards, p)
	}
	merged := filepath.Join(dir, "merged.json")
	e, stdout, stderr = freshTestEnv()
	if code := run(e, append([]string{"contamination", "merge", merged, "--json"}, shards...)); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, stderr)
	}
	var summary struct{ Line string }
	if err := json.Unmarshal(stdout.Bytes(), &summary); err != nil || summary.Line != strings.TrimPrefix(want, "Contamination: ") {
		t.Errorf("merge --json: %q (%v)", stdout, err)
	}

	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"contamination", "scan", "--out", out}, 2, "--train"},
		{[]string{"contamination", "scan", "--train", train, "--out", out}, 1, "exists (use --force"},
		{[]string{"contamination", "scan", "--train", train, "--out", out + "2", "--shard", "3/2"}, 2, `shard "3/2"`},
		{[]string{"contamination", "scan", "--train", train, "--out", out + "2", "--n", "2"}, 2, "--n 2"},
		{[]string{"contamination", "scan", "--train", train, "--out", out + "2", "--tests", "mmlu"}, 2, "--tests"},
		{[]string{"contamination", "merge", out, shards[0]}, 1, "exists"},
	} {
		e, _, stderr := freshTestEnv()
		if code := run(e, tc.args); code != tc.code || !strings.Contains(stderr.String(), tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.msg)
		}
	}
}

func TestScoreProbesExcludesWhatAScanFound(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	items := generateItems(t, dir, 3)
	set, err := probes.LoadFile(items)
	if err != nil {
		t.Fatal(err)
	}
	train := filepath.Join(dir, "train.txt")
	leaked := set.Items[5]
	os.WriteFile(train, []byte(leaked.Prompt+" "+leaked.Answer+"\n"), 0o644)
	report := filepath.Join(dir, "scan.json")
	e, _, stderr := freshTestEnv()
	if code := run(e, []string{"contamination", "scan", "--train", train, "--tests", "probes", "--items", items, "--out", report}); code != 0 {
		t.Fatalf("scan: exit %d: %s", code, stderr)
	}

	open := func(string, int, bool) (runner.Model, error) { return testmodel.RandomBigram(4), nil }
	out := filepath.Join(dir, "run.jsonl")
	o := scoreProbesOptions{Model: "bigram.gguf", Items: items, Open: open}
	o.Run.Out, o.Run.BOSMode = out, "auto"
	o.Exclude = report
	e, _, _ = freshTestEnv()
	if err := scoreProbes(e, o); err != nil {
		t.Fatal(err)
	}
	r, err := runfile.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Items) != len(set.Items)-1 || slices.ContainsFunc(r.Items, func(it runfile.Item) bool { return it.ID == leaked.ID }) {
		t.Errorf("scored %d of %d items; %s must be left out", len(r.Items), len(set.Items), leaked.ID)
	}
	if x := r.Header.Contamination; x == nil || !slices.Equal(x.IDs, []string{leaked.ID}) || x.Report != "scan.json" || x.N != 13 || !x.Excluded || x.Checked != len(set.Items) {
		t.Errorf("header contamination %+v", r.Header.Contamination)
	}

	// --contamination records and scores everything.
	o.Exclude, o.Contamination, o.Run.Out = "", report, filepath.Join(dir, "all.jsonl")
	e, _, _ = freshTestEnv()
	if err := scoreProbes(e, o); err != nil {
		t.Fatal(err)
	}
	if r, err = runfile.ReadFile(o.Run.Out); err != nil {
		t.Fatal(err)
	}
	if x := r.Header.Contamination; len(r.Items) != len(set.Items) || x == nil || x.Excluded || !slices.Equal(x.IDs, []string{leaked.ID}) {
		t.Errorf("--contamination: %d items scored, header %+v", len(r.Items), x)
	}
	o.Contamination = ""
	o.Exclude = report

	// A report scanned against other items is refused.
	o.Items, o.Run.Out = "", filepath.Join(dir, "core.jsonl")
	e, _, _ = freshTestEnv()
	if err := scoreProbes(e, o); err == nil || !strings.Contains(err.Error(), "not the data being scored") {
		t.Errorf("report for other items: %v", err)
	}
}

// A scan that did not read the training text fails, as the binary's exit
// status says, naming the file and line; told otherwise it goes on (issue
// 32: text under "content" was reported as 0 of 2,000 found, exit 0).
func TestContaminationScanRefusesWhatItCouldNotRead(t *testing.T) {
	t.Parallel()
	core, err := probes.Core()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var content bytes.Buffer
	for _, it := range core.Items {
		line, _ := json.Marshal(map[string]string{"id": it.ID, "content": it.Prompt + " " + it.Answer})
		content.Write(append(line, '\n'))
	}
	var gz bytes.Buffer
	z := gzip.NewWriter(&gz)
	z.Write(bytes.ReplaceAll(content.Bytes(), []byte(`"content"`), []byte(`"text"`)))
	z.Close()
	for _, tc := range []struct {
		name  string
		file  string
		flags []string
		code  int
		want  []string // on stderr
	}{
		{"text under another field", write("content.jsonl", content.Bytes()), nil, 1,
			[]string{"content.jsonl: 2,000 of 2,000 records have no text in \"text\", first at line 1", "read no text", "no report written"}},
		{"the field named", "content.jsonl", []string{"--text-field", "content"}, 0, nil},
		{"empty input", write("empty.jsonl", nil), nil, 1, []string{"read no text: 1 training file, 0 records"}},
		{"empty input allowed", "empty.jsonl", []string{"--allow-empty"}, 0, nil},
		{"some records without the field", write("mixed.jsonl", []byte("{\"text\": \"a few words\"}\n{\"body\": \"x\"}\n")), nil, 1,
			[]string{"mixed.jsonl: 1 of 2 records have no text in \"text\", first at line 2"}},
		{"some records without the field, allowed", "mixed.jsonl", []string{"--allow-missing"}, 0,
			[]string{"warning: " + filepath.Join(dir, "mixed.jsonl") + ": 1 of 2 records"}},
		{"binary file named .txt", write("photo.txt", append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), bytes.Repeat([]byte{0, 1, 2, 255}, 500)...)), nil, 1,
			[]string{"photo.txt line 3: binary data (a NUL byte), not text"}},
		{"not UTF-8", write("latin1.txt", []byte("plain words\ncaf\xe9 cr\xe8me\n")), nil, 0,
			[]string{"latin1.txt: 2 bytes are not UTF-8, first at line 2"}},
		{"truncated gzip", write("cut.jsonl.gz", gz.Bytes()[:gz.Len()/2]), nil, 1,
			[]string{"cut.jsonl.gz line ", "truncated gzip stream"}},
	} {
		out := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".json")
		args := append([]string{"contamination", "scan", "--tests", "probes", "--train", filepath.Join(dir, filepath.Base(tc.file)), "--out", out}, tc.flags...)
		code, _, stderr := runBinary(t, dir, nil, args...)
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d; stderr:\n%s", tc.name, code, tc.code, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: stderr does not say %q:\n%s", tc.name, w, stderr)
			}
		}
		if _, err := os.Stat(out); (err == nil) != (tc.code == 0) {
			t.Errorf("%s: exit %d, report written: %v", tc.name, code, err == nil)
		}
		// A scan that read everything leaves no state to resume; one that
		// stopped at a bad file keeps what it finished.
		if _, err := os.Stat(out + ".state"); err == nil && (code == 0 || strings.Contains(stderr, "no report written")) {
			t.Errorf("%s: state file left behind", tc.name)
		}
	}
}
