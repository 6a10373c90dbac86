package report

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/compare/comparetest"
	"github.com/udgamlabs/udgam-ci/internal/goldentest"
	"github.com/udgamlabs/udgam-ci/runfile"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldentest.Check(t, filepath.Join("testdata", name), got, *update)
}

// defaultMinEffect is each test's default, which the comments show.
var defaultMinEffect = compare.NewOptions().MinEffect

func mustCompare(t *testing.T, base, head *runfile.Run, opts compare.Options) *compare.Comparison {
	t.Helper()
	c, err := compare.Runs(base, head, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// renderCases are the comments the golden files hold.
func renderCases(t *testing.T) map[string]Comment {
	docs := comparetest.SynthDocs(60, 11, 0.95, 0.15)
	bi, hi := comparetest.PairedItems(140, 11, 0.45, 0.45)
	fresh := func(id, model string, d []runfile.Doc) *runfile.Run {
		r := comparetest.FreshRun(id, model, d)
		return r
	}
	headRev := func(r *runfile.Run) *runfile.Run {
		r.Header.Model.Revision = "fedcba9876543210fedcba9876543210fedcba98"
		r.Header.Git = runfile.Git{Repo: "udgamlabs/tiny", SHA: "def5678", Ref: "pr-12"}
		return r
	}

	regression := mustCompare(t, fresh("base-1", "udgamlabs/tiny-lm", docs),
		headRev(fresh("head-1", "udgamlabs/tiny-lm", comparetest.Jittered(comparetest.Shifted(docs, 0.012), 1, 0.01))), compare.Options{MinEffect: defaultMinEffect, Seed: 1})

	improved := mustCompare(t, comparetest.ProbeRun("base-2", "udgamlabs/tiny-lm", bi),
		headRev(comparetest.ProbeRun("head-2", "udgamlabs/tiny-lm", comparetest.ShiftItems(hi, 3))), compare.Options{MinEffect: defaultMinEffect, Seed: 1, ByLevel: true})

	noChange := mustCompare(t, fresh("base-3", "udgamlabs/tiny-lm", docs),
		headRev(fresh("head-3", "udgamlabs/tiny-lm", comparetest.Jittered(docs, 3, 0.01))), compare.Options{MinEffect: defaultMinEffect, Seed: 1})

	mmHead := headRev(fresh("head-4", "udgamlabs/tiny-lm", comparetest.Jittered(comparetest.Shifted(docs, -0.004), 4, 0.005)))
	mmHead.Header.Settings.Window, mmHead.Header.Settings.Stride = 1024, 512
	mmHead.Header.Runtime.Threads = 8
	mismatch := mustCompare(t, fresh("base-4", "udgamlabs/tiny-lm", docs), mmHead, compare.Options{MinEffect: defaultMinEffect, Seed: 1, AllowSettingsMismatch: true})

	pairFresh := mustCompare(t, fresh("base-5", "HuggingFaceTB/SmolLM2-135M", docs),
		headRev(fresh("head-5", "HuggingFaceTB/SmolLM2-135M", comparetest.Jittered(comparetest.Shifted(docs[5:], -0.006), 5, 0.008))), compare.Options{MinEffect: defaultMinEffect, Seed: 1})
	pairProbes := mustCompare(t, comparetest.ProbeRun("base-6", "HuggingFaceTB/SmolLM2-135M", bi),
		headRev(comparetest.ProbeRun("head-6", "HuggingFaceTB/SmolLM2-135M", hi)), compare.Options{MinEffect: defaultMinEffect, Seed: 1})

	otherHead := fresh("head-7", "models/local-360m.gguf", comparetest.Shifted(docs, -0.08))
	otherHead.Header.Model.Revision = ""
	otherHead.Header.Settings.TokenizerSHA256 = "tok-other"
	otherHead.Header.Settings.BOSID = 0
	otherModel := mustCompare(t, fresh("base-7", "HuggingFaceTB/SmolLM2-135M", docs), otherHead, compare.Options{MinEffect: defaultMinEffect, Seed: 1})

	smokeBase, smokeHead := comparetest.ProbeRun("base-8", "udgamlabs/tiny-lm", bi), headRev(comparetest.ProbeRun("head-8", "udgamlabs/tiny-lm", comparetest.ShiftItems(hi, 3)))
	for _, r := range []*runfile.Run{smokeBase, smokeHead} {
		r.Header.Dataset.Smoke = true
		r.Header.Dataset.Constant = map[string]float64{"add": 99, "mul": 25}
	}
	smoke := mustCompare(t, smokeBase, smokeHead, compare.Options{MinEffect: defaultMinEffect, Seed: 1})

	return map[string]Comment{
		"smoke":       {Tests: []*compare.Comparison{smoke}, Verdict: "This job fails because Probe Suite regressed (fail-on: regression)."},
		"regression":  {Tests: []*compare.Comparison{regression}},
		"improvement": {Tests: []*compare.Comparison{improved}},
		"no_change":   {Tests: []*compare.Comparison{noChange}},
		"mismatch":    {Tests: []*compare.Comparison{mismatch}, ServerFlags: []string{"window differs from the baseline run base-4"}},
		"fresh_probes": {Model: "HuggingFaceTB/SmolLM2-135M", Tests: []*compare.Comparison{pairFresh, pairProbes},
			RunURLs: []Link{{"base fresh", "https://ci.example/runs/base-5"}, {"head fresh", "https://ci.example/runs/head-5"}}},
		"other_model": {Tests: []*compare.Comparison{otherModel}},
	}
}

// The comment names its data first, bold when it is the smoke sample, says
// what the job concludes, explains its terms and warns where the head does
// not beat the constant answer (issue 14).
func TestCommentSaysWhatWasMeasured(t *testing.T) {
	t.Parallel()
	c := renderCases(t)["smoke"]
	var md bytes.Buffer
	if err := RenderComment(&md, c); err != nil {
		t.Fatal(err)
	}
	got := md.String()
	top := strings.SplitN(got, "| Test |", 2)[0]
	for _, want := range []string{"Probe Suite data: `udgam/probes-core`", "**smoke sample — not the benchmark**", "**" + c.Verdict + "**"} {
		if !strings.Contains(top, want) {
			t.Errorf("the lines above the table lack %q:\n%s", want, top)
		}
	}
	for _, want := range []string{"R→W: items right in base and wrong in head", "p: two-sided bootstrap p-value",
		"| Chance | Constant |", "99.0 ⚠️", "does not beat always giving the same answer on add ("} {
		if !strings.Contains(got, want) {
			t.Errorf("comment lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "bpb: bits per byte") || strings.Contains(got, "mul (") {
		t.Errorf("comment explains bpb on a probes-only comparison or warns on a type the head beats:\n%s", got)
	}
}

func TestRenderGolden(t *testing.T) {
	t.Parallel()
	for name, c := range renderCases(t) {
		t.Run(name, func(t *testing.T) {
			var md, sum, txt bytes.Buffer
			if err := RenderComment(&md, c); err != nil {
				t.Fatal(err)
			}
			if err := RenderSummary(&sum, c); err != nil {
				t.Fatal(err)
			}
			if err := RenderText(&txt, c); err != nil {
				t.Fatal(err)
			}
			golden(t, name+".md", md.Bytes())
			golden(t, name+".txt", txt.Bytes())
			checkGitHubMarkdown(t, md.String())

			model := c.Model
			if model == "" {
				model = c.Tests[0].HeadRun.Model
			}
			first, rest, _ := strings.Cut(md.String(), "\n")
			if first != Marker(model) {
				t.Errorf("comment starts with %q, want the marker %q", first, Marker(model))
			}
			if sum.String() != rest {
				t.Errorf("the summary is not the comment without its marker:\n%s", sum.String())
			}
			for _, tc := range c.Tests {
				if !strings.Contains(md.String(), string(tc.Verdict)) || !strings.Contains(txt.String(), string(tc.Verdict)) {
					t.Errorf("verdict %q missing", tc.Verdict)
				}
			}
		})
	}
}

var (
	separatorRow = regexp.MustCompile(`(?m)^\|(:?-{3,}:?\|)+$`)
	unescaped    = regexp.MustCompile(`(^|[^\\])\|`)
)

// cells counts a table row's columns, ignoring escaped pipes.
func cells(row string) int {
	return len(unescaped.FindAllString(row, -1)) - 1
}

// checkGitHubMarkdown reports what would stop GitHub rendering the comment
// as meant.
func checkGitHubMarkdown(t *testing.T, md string) {
	t.Helper()
	for _, p := range markdownProblems(md) {
		t.Error(p)
	}
}

// markdownProblems lists layout faults: each table must be set off by a
// blank line, have a separator row right under its header and the same
// number of cells in every row; <details> blocks must leave blank lines
// around the Markdown inside them; HTML comments must be closed.
func markdownProblems(md string) []string {
	var out []string
	bad := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	lines := strings.Split(md, "\n")
	inTable, cols := false, 0
	for i, l := range lines {
		isRow := strings.HasPrefix(l, "|")
		switch {
		case isRow && !inTable:
			if i > 0 && lines[i-1] != "" {
				bad("line %d: table not preceded by a blank line: %q", i+1, lines[i-1])
			}
			if i+1 >= len(lines) || !separatorRow.MatchString(lines[i+1]) {
				bad("line %d: table header without a separator row under it", i+1)
			}
			inTable, cols = true, cells(l)
		case isRow:
			if n := cells(l); n != cols {
				bad("line %d: %d cells, the header has %d: %q", i+1, n, cols, l)
			}
		case inTable:
			inTable = false
			if l != "" {
				bad("line %d: table not followed by a blank line: %q", i+1, l)
			}
		}
		if strings.HasPrefix(l, "<details") && !detailsOpen.MatchString(l) {
			bad("line %d: malformed %q", i+1, l)
		}
		if strings.HasPrefix(l, "<summary>") && (i+1 >= len(lines) || lines[i+1] != "") {
			bad("line %d: no blank line after <summary>", i+1)
		}
		if l == "</details>" && (i == 0 || lines[i-1] != "") {
			bad("line %d: no blank line before </details>", i+1)
		}
	}
	if strings.Count(md, "<details") != strings.Count(md, "</details>") {
		bad("unbalanced <details>")
	}
	if strings.Count(md, "<!--") != strings.Count(md, "-->") {
		bad("unclosed HTML comment")
	}
	return out
}

var detailsOpen = regexp.MustCompile(`^<details( open)?>$`)

func TestMarkdownProblemsCatchesBrokenLayout(t *testing.T) {
	t.Parallel()
	good := "text\n\n| a | b |\n|---|---:|\n| 1 | 2 |\n\n<details>\n<summary>s</summary>\n\n| a |\n|---|\n| x \\| y |\n\n</details>\n"
	if p := markdownProblems(good); len(p) != 0 {
		t.Fatalf("good Markdown flagged: %v", p)
	}
	for _, broken := range []string{
		"text\n| a | b |\n|---|---|\n",                     // no blank line before
		"| a | b |\n| 1 | 2 |\n",                           // no separator
		"| a | b |\n|---|---|\n| 1 | 2 | 3 |\n",            // extra cell
		"<details>\n<summary>s</summary>\n| a |\n",         // no blank after summary
		"<details>\n<summary>s</summary>\n\nx\n</details>", // no blank before </details>
		"<!-- marker\n",
	} {
		if len(markdownProblems(broken)) == 0 {
			t.Errorf("not flagged: %q", broken)
		}
	}
}

func TestMarker(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"HuggingFaceTB/SmolLM2-135M", "<!-- udgam-ci: model=HuggingFaceTB/SmolLM2-135M -->"},
		{"evil-->\nname", "<!-- udgam-ci: model=evil-- name -->"},
	} {
		if got := Marker(tc.in); got != tc.want {
			t.Errorf("Marker(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFormat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ got, want string }{
		{FormatScore(compare.MetricBPB, 0.94449), "0.9445"},
		// 689 of 2,000 is 34.45: the score and the comparison both compute
		// it as 100·689/2000 (runfile.Ratio), so both show 34.5.
		{FormatScore(compare.MetricAccuracy, runfile.Percent(689, 2000)), "34.5"},
		{FormatScore(compare.MetricAccuracy, mustCompare(t, comparetest.ProbeRun("a", "m", probeItems(689, 2000)),
			comparetest.ProbeRun("b", "m", probeItems(689, 2000)), compare.Options{MinEffect: defaultMinEffect, Resamples: 1}).Base), "34.5"},
		{FormatScore(compare.MetricAccuracy, runfile.SummarizeProbes(probeItems(689, 2000)).Accuracy), "34.5"},
		{FormatDelta(compare.MetricBPB, -0.00314), "-0.0031"},
		{FormatDelta(compare.MetricBPB, 0.00001), "0.0000"},
		{FormatDelta(compare.MetricBPB, -0.00001), "0.0000"},
		{FormatScore(compare.MetricAccuracy, 44.44), "44.4"},
		{FormatDelta(compare.MetricAccuracy, 1.25), "+1.2"},
		{FormatCI(compare.MetricAccuracy, [2]float64{-0.3, 2.96}), "[-0.3, +3.0]"},
		{FormatOutput(compare.MetricAccuracy, 34.449), "34.45"},
		{FormatOutput(compare.MetricBPB, -0.00314), "-0.0031"},
		{FormatCount(1670), "1,670"},
		{FormatCount(999), "999"},
		{FormatCount(1234567), "1,234,567"},
		{FormatP(0.0004), "p < 0.001"},
		{FormatP(0.0496), "p = 0.050"},
		{FormatMinEffect(compare.MetricAccuracy, 1), "1.0 point"},
		{FormatMinEffect(compare.MetricBPB, 0.002), "0.002 bpb"},
		{hubURL("org/name", "abc"), "https://huggingface.co/org/name/tree/abc"},
		{hubURL("models/x.gguf", "abc"), ""},
		{hubURL("/abs/path", ""), ""},
		{modelLabel("org/name", "0123456789abcdef0123456789abcdef01234567"), "org/name@0123456"},
		{modelLabel("org/name", "main"), "org/name@main"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// When cmark-gfm (GitHub's Markdown parser) is installed, every golden
// Markdown file must parse into as many HTML tables as it has tables, with
// no table left as a paragraph of pipes.
func TestGoldenMarkdownParsesAsGFM(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("cmark-gfm")
	if err != nil {
		t.Skip("cmark-gfm not installed")
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden Markdown files: %v", err)
	}
	for _, f := range files {
		out, err := exec.Command(bin, "--unsafe", "-e", "table", f).Output()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want := len(separatorRow.FindAll(src, -1))
		html := string(out)
		if got := strings.Count(html, "<table>"); got != want || strings.Contains(html, "<p>|") {
			t.Errorf("%s: %d HTML tables for %d Markdown tables (or a table left as text)", f, got, want)
		}
		if strings.Count(html, "<details") != strings.Count(html, "</details>") {
			t.Errorf("%s: unbalanced <details> after parsing", f)
		}
	}
}

// probeItems is n two-choice items of which the first k are right.
func probeItems(k, n int) []runfile.Item {
	items := make([]runfile.Item, n)
	for i := range items {
		items[i] = runfile.Item{ID: strconv.Itoa(i), Logprobs: []float64{0, -1}, Correct: i < k}
	}
	return items
}
