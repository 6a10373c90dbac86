// Command probecheck holds run.sh's Probe Suite anchor to the ruler rule:
// the per-item values mc.cpp wrote (--values) must be udgam-ci's own for
// the same items, read from its run file: the same items in the same
// order, the same continuation tokens, every choice's summed
// log-probability within -tol nats per token of it (each token's
// log-probability within -tol, as the engine's tests hold them), and the
// same pick. It prints what it compared and the largest differences, or
// names the items that disagree and exits 1. With -inform only the items
// and tokens must agree: the differences are printed, not judged (for a
// model whose float16 weights make values move with the batch's shape).
//
//	go run ./scripts/llamacpp/probecheck [-tol 1e-4] [-inform] VALUES RUN.jsonl
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/udgamlabs/udgam-ci/runfile"
)

func main() {
	tol := flag.Float64("tol", 1e-4, "largest difference allowed per scored token of a choice, nats")
	inform := flag.Bool("inform", false, "print the differences without judging them")
	flag.Parse()
	if flag.NArg() != 2 || !(*tol >= 0) {
		fmt.Fprintln(os.Stderr, "usage: probecheck [-tol NATS] [-inform] VALUES RUN.jsonl")
		os.Exit(2)
	}
	rep, err := check(flag.Arg(0), flag.Arg(1), *tol, *inform)
	if err != nil {
		fmt.Fprintln(os.Stderr, "probecheck:", err)
		os.Exit(1)
	}
	fmt.Println(rep)
}

// value is one line of mc.cpp's --values file.
type value struct {
	id       string
	pick     int
	tokens   []int // per choice
	logprobs []float64
}

// report is what a comparison found.
type report struct {
	items, choices, samePicks int
	maxDiff, maxPerToken      float64 // of a choice's sum, and that over its tokens
	maxID, maxPerTokenID      string
}

func (r report) String() string {
	return fmt.Sprintf("items=%d choices=%d same_picks=%d max_diff=%.3g (%s) max_diff_per_token=%.3g (%s)",
		r.items, r.choices, r.samePicks, r.maxDiff, r.maxID, r.maxPerToken, r.maxPerTokenID)
}

func check(valuesPath, runPath string, tol float64, inform bool) (report, error) {
	f, err := os.Open(valuesPath)
	if err != nil {
		return report{}, err
	}
	defer f.Close()
	vals, err := readValues(f, valuesPath)
	if err != nil {
		return report{}, err
	}
	run, err := runfile.ReadFile(runPath)
	if err != nil {
		return report{}, err
	}
	return compare(vals, run.Items, tol, inform)
}

func readValues(r io.Reader, name string) ([]value, error) {
	var out []value
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		f := strings.Split(sc.Text(), "\t")
		if len(f) < 4 {
			return nil, fmt.Errorf("%s line %d: %d fields, want id, pick, tokens and a log-probability per choice", name, n, len(f))
		}
		v := value{id: f[0]}
		var err error
		if v.pick, err = strconv.Atoi(f[1]); err != nil {
			return nil, fmt.Errorf("%s line %d: pick: %w", name, n, err)
		}
		for _, s := range strings.Split(f[2], ",") {
			k, err := strconv.Atoi(s)
			if err != nil || k < 1 {
				return nil, fmt.Errorf("%s line %d: tokens %q: want a count of one or more per choice", name, n, f[2])
			}
			v.tokens = append(v.tokens, k)
		}
		for i, s := range f[3:] {
			lp, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsNaN(lp) || lp > 0 {
				return nil, fmt.Errorf("%s line %d: choice %d: %q is not a log-probability", name, n, i, s)
			}
			v.logprobs = append(v.logprobs, lp)
		}
		if len(v.tokens) != len(v.logprobs) {
			return nil, fmt.Errorf("%s line %d: %d token counts for %d choices", name, n, len(v.tokens), len(v.logprobs))
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return out, nil
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// compare holds mc's values against udgam-ci's records; the error names
// up to five items that disagree.
func compare(vals []value, recs []runfile.Item, tol float64, inform bool) (report, error) {
	if len(vals) != len(recs) {
		return report{}, fmt.Errorf("mc scored %d items, udgam-ci %d", len(vals), len(recs))
	}
	if len(vals) == 0 {
		return report{}, fmt.Errorf("no items to compare")
	}
	rep := report{items: len(vals)}
	var bad []string
	for i, v := range vals {
		r := recs[i]
		switch {
		case v.id != r.ID:
			bad = append(bad, fmt.Sprintf("item %d is %s for mc and %s for udgam-ci", i+1, v.id, r.ID))
			continue
		case len(v.logprobs) != len(r.Logprobs):
			bad = append(bad, fmt.Sprintf("item %s: %d choices for mc, %d for udgam-ci", v.id, len(v.logprobs), len(r.Logprobs)))
			continue
		case sum(v.tokens) != r.Tokens:
			bad = append(bad, fmt.Sprintf("item %s: %d continuation tokens for mc, %d for udgam-ci", v.id, sum(v.tokens), r.Tokens))
			continue
		}
		rep.choices += len(v.logprobs)
		if v.pick == r.Pred {
			rep.samePicks++
		} else if !inform {
			bad = append(bad, fmt.Sprintf("item %s: mc picks %d, udgam-ci %d (log-probabilities %v and %v)", v.id, v.pick, r.Pred, v.logprobs, r.Logprobs))
		}
		for c := range v.logprobs {
			d := math.Abs(v.logprobs[c] - r.Logprobs[c])
			per := d / float64(v.tokens[c])
			if d > rep.maxDiff || rep.maxID == "" {
				rep.maxDiff, rep.maxID = d, v.id
			}
			if per > rep.maxPerToken || rep.maxPerTokenID == "" {
				rep.maxPerToken, rep.maxPerTokenID = per, v.id
			}
			if !inform && !(per <= tol) {
				bad = append(bad, fmt.Sprintf("item %s choice %d: %.9g for mc, %.9g for udgam-ci (%.3g nats apart over %d tokens)",
					v.id, c, v.logprobs[c], r.Logprobs[c], d, v.tokens[c]))
			}
		}
	}
	if len(bad) > 0 {
		shown := bad[:min(len(bad), 5)]
		return report{}, fmt.Errorf("%d disagreements over %d items (tolerance %g nats per token):\n  %s\n%s", len(bad), len(vals), tol, strings.Join(shown, "\n  "), rep)
	}
	return rep, nil
}
