package structure

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/convert"
	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/evals/contamination"
	"github.com/udgamlabs/udgam-ci/evals/fresh"
	"github.com/udgamlabs/udgam-ci/internal/numfmt"
)

// readmeDefault is one default as README.md writes it: every match of
// pattern must say want (its first group), and there is at least one.
type readmeDefault struct {
	what    string
	pattern string
	want    string
}

// readmeDefaults are the defaults README.md names, each from its home: the
// CLI's flags and the Action's inputs read the same constants.
func readmeDefaults() []readmeDefault {
	pct := strconv.FormatFloat(100*compare.DefaultConfidence, 'g', -1, 64)
	return []readmeDefault{
		{"dtypes", `--dtype ([a-z0-9_|]+)\]`, strings.Join(convert.Dtypes, "|")},
		{"BOS modes", "--add-bos ([a-z]+\\|[a-z|]+)`", strings.Join(evals.BOSModes, "|")},
		{"window", `a ([0-9,]+)-token window that slides`, numfmt.Count(fresh.DefaultWindow)},
		{"stride", `window that slides by ([0-9,]+) tokens`, numfmt.Count(fresh.DefaultStride)},
		{"resamples", `([0-9,]+) resamples`, numfmt.Count(compare.DefaultResamples)},
		{"level", `\b([0-9.]+)% intervals?\b`, pct},
		{"minimum effect (bits per byte)", `minimum effect \(([0-9.]+) bpb`, strconv.FormatFloat(compare.DefaultMinEffectBPB, 'g', -1, 64)},
		{"minimum effect (accuracy)", `bpb, ([0-9.]+) accuracy point`, strconv.FormatFloat(compare.DefaultMinEffectAccuracy, 'g', -1, 64)},
		{"n-gram size", `\b([0-9]+)-grams?\b`, strconv.Itoa(contamination.DefaultN)},
		{"n-gram flag", `\[--n ([0-9]+)\]`, strconv.Itoa(contamination.DefaultN)},
	}
}

// checkDefaults lists where text disagrees with the defaults.
func checkDefaults(text string, defs []readmeDefault) []string {
	var out []string
	for _, d := range defs {
		ms := regexp.MustCompile(d.pattern).FindAllStringSubmatch(text, -1)
		if len(ms) == 0 {
			out = append(out, fmt.Sprintf("%s: no mention (%s)", d.what, d.pattern))
		}
		for _, m := range ms {
			if m[1] != d.want {
				out = append(out, fmt.Sprintf("%s: %q says %s, the default is %s", d.what, m[0], m[1], d.want))
			}
		}
	}
	return out
}

func TestReadmeDefaults(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range checkDefaults(string(b), readmeDefaults()) {
		t.Errorf("README.md: %s", v)
	}
}

func TestCheckDefaults(t *testing.T) {
	t.Parallel()
	defs := []readmeDefault{{"window", `a ([0-9,]+)-token window`, "2,048"}}
	if got := checkDefaults("a 2,048-token window, then a 4,096-token window", defs); len(got) != 1 || !strings.Contains(got[0], "4,096") {
		t.Errorf("a wrong mention: %q", got)
	}
	if got := checkDefaults("no windows here", defs); len(got) != 1 || !strings.Contains(got[0], "no mention") {
		t.Errorf("no mention: %q", got)
	}
	if got := checkDefaults("a 2,048-token window", defs); len(got) != 0 {
		t.Errorf("the right mention: %q", got)
	}
}
