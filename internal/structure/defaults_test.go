package structure

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/convert"
	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/evals/contamination"
	"github.com/udgamlabs/udgam-ci/evals/fresh"
	"github.com/udgamlabs/udgam-ci/internal/numfmt"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// docDefault is one default as the documentation (README.md and docs/)
// writes it: every match of pattern must say want (its first group), and
// some page has one.
type docDefault struct {
	what    string
	pattern string
	want    string
}

// docDefaults are the defaults the documentation names, each from its home:
// the CLI's flags and the Action's inputs read the same constants.
func docDefaults() []docDefault {
	pct := strconv.FormatFloat(100*compare.DefaultConfidence, 'g', -1, 64)
	return []docDefault{
		{"dtypes", `--dtype ([a-z0-9_|]+)\]`, strings.Join(convert.Dtypes, "|")},
		{"BOS modes", "--add-bos ([a-z]+\\|[a-z|]+)`", strings.Join(evals.BOSModes, "|")},
		{"window", `a ([0-9,]+)-token window that slides`, numfmt.Count(fresh.DefaultWindow)},
		{"stride", `window that slides by ([0-9,]+) tokens`, numfmt.Count(fresh.DefaultStride)},
		{"resamples", `([0-9,]+) resamples`, numfmt.Count(compare.DefaultResamples)},
		{"level", `\b([0-9.]+)% intervals?\b`, pct},
		{"minimum effect (bits per byte)", `minimum effect \(([0-9.]+) bpb`, strconv.FormatFloat(compare.DefaultMinEffect(runfile.TestFresh), 'g', -1, 64)},
		{"minimum effect (accuracy)", `bpb, ([0-9.]+) accuracy point`, strconv.FormatFloat(compare.DefaultMinEffect(runfile.TestProbes), 'g', -1, 64)},
		{"n-gram size", `\b([0-9]+)-grams?\b`, strconv.Itoa(contamination.DefaultN)},
		{"n-gram flag", `\[--n ([0-9]+)\]`, strconv.Itoa(contamination.DefaultN)},
	}
}

// checkDefaults lists where pages (name to text) disagree with the
// defaults, and the defaults no page mentions.
func checkDefaults(pages map[string]string, defs []docDefault) []string {
	names := make([]string, 0, len(pages))
	for name := range pages {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []string
	for _, d := range defs {
		re, seen := regexp.MustCompile(d.pattern), false
		for _, name := range names {
			for _, m := range re.FindAllStringSubmatch(pages[name], -1) {
				seen = true
				if m[1] != d.want {
					out = append(out, fmt.Sprintf("%s: %s: %q says %s, the default is %s", name, d.what, m[0], m[1], d.want))
				}
			}
		}
		if !seen {
			out = append(out, fmt.Sprintf("%s: no page mentions it (%s)", d.what, d.pattern))
		}
	}
	return out
}

// docPages reads README.md and docs/*.md, keyed by their path from the
// repository's root.
func docPages(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string]string{}
	for _, p := range append(paths, "../../README.md") {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		pages[strings.TrimPrefix(filepath.ToSlash(p), "../../")] = string(b)
	}
	return pages
}

func TestDocsDefaults(t *testing.T) {
	t.Parallel()
	for _, v := range checkDefaults(docPages(t), docDefaults()) {
		t.Error(v)
	}
}

func TestCheckDefaults(t *testing.T) {
	t.Parallel()
	defs := []docDefault{{"window", `a ([0-9,]+)-token window`, "2,048"}}
	page := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name  string
		pages map[string]string
		want  []string // substrings of each finding, in order
	}{
		{"a wrong mention", page("a.md", "a 2,048-token window, then a 4,096-token window"), []string{"a.md: window: \"a 4,096-token window\" says 4,096"}},
		{"wrong on another page", page("a.md", "a 2,048-token window", "b.md", "a 1,024-token window"), []string{"b.md: window"}},
		{"no mention", page("a.md", "no windows here", "b.md", "nor here"), []string{"no page mentions it"}},
		{"the right mention on one page", page("a.md", "no windows here", "b.md", "a 2,048-token window"), nil},
	}
	for _, tt := range tests {
		got := checkDefaults(tt.pages, defs)
		if len(got) != len(tt.want) {
			t.Errorf("%s: %q, want %d findings", tt.name, got, len(tt.want))
			continue
		}
		for i, w := range tt.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: %q lacks %q", tt.name, got[i], w)
			}
		}
	}
}
