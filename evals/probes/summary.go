package probes

import (
	"fmt"
	"io"
	"strings"

	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Summary is what a probes run prints when done; its JSON form is the
// --json output of `score probes`: accuracy by type, with ties, chance,
// acc_norm and by_level beside it.
type Summary struct {
	Test     string  `json:"test"`
	Accuracy float64 `json:"accuracy"` // percent
	Correct  int     `json:"correct"`
	Items    int     `json:"items"`
	Ties     int     `json:"ties"`
	Chance   float64 `json:"chance"`   // percent
	AccNorm  float64 `json:"acc_norm"` // percent, by log-probability per byte
	// Margin is the mean byte-normalised margin (runfile.NormMargin) in
	// nats per byte, overall and by type; absent without per-byte scores.
	Margin       *float64           `json:"margin,omitempty"`
	MarginByType map[string]float64 `json:"margin_by_type,omitempty"`
	// MarginCI is the margin's own 95% interval and Variants the spread
	// across prompt variants (--variants): statistics over the finished
	// run, which the caller fills after scoring (compare.ProbeStats).
	MarginCI *[2]float64                    `json:"margin_ci,omitempty"`
	Variants *runfile.Spread                `json:"variants,omitempty"`
	ByType   map[string]*runfile.ProbeGroup `json:"by_type"`
	ByLevel  map[string]*runfile.ProbeGroup `json:"by_level"` // key "type/level"
	Run      string                         `json:"run"`
	Model    runfile.Model                  `json:"model"`
	Dataset  runfile.Dataset                `json:"dataset"`
	Settings runfile.Settings               `json:"settings"`
	Seconds  float64                        `json:"seconds"`
	// Sequential is the run's --until decided record, where it stopped,
	// and Cost what its records are of the set.
	Sequential *runfile.Sequential `json:"sequential,omitempty"`
	Cost       *runfile.Cost       `json:"cost,omitempty"`
	// Reused is set when the model was unchanged from the baseline's and
	// nothing was scored.
	Reused *runfile.Reused `json:"reused,omitempty"`
	// Notes say why the run scored other than asked (evals.SelectionNotes).
	Notes []string `json:"notes,omitempty"`
}

// Summarize recomputes the scores from the records.
func Summarize(h runfile.Header, items []runfile.Item, seconds float64) Summary {
	ps := runfile.SummarizeProbes(items)
	s := Summary{
		Test:     runfile.TestProbes,
		Accuracy: ps.Accuracy,
		Correct:  ps.Correct,
		Items:    ps.Items,
		Ties:     ps.Ties,
		Chance:   ps.Chance,
		AccNorm:  AccNorm(items),
		ByType:   ps.ByType,
		ByLevel:  ps.ByLevel,
		Run:      h.ID,
		Model:    h.Model,
		Dataset:  h.Dataset,
		Settings: h.Settings,
		Seconds:  seconds,
		Notes:    evals.SelectionNotes(h, "items"),

		Sequential: h.Sequential,
		Cost:       evals.SequentialCost(&runfile.Run{Header: h, Items: items}),
		Reused:     h.Reused,
	}
	s.Margin, s.MarginByType = margins(items)
	return s
}

// margins are the mean byte-normalised margin overall and by type.
func margins(items []runfile.Item) (*float64, map[string]float64) {
	all, ok := runfile.MeanNormMargin(items)
	if !ok {
		return nil, nil
	}
	byType := map[string][]runfile.Item{}
	for _, it := range items {
		byType[it.Type] = append(byType[it.Type], it)
	}
	out := map[string]float64{}
	for k, its := range byType {
		out[k], _ = runfile.MeanNormMargin(its)
	}
	return &all, out
}

// AccNorm is the accuracy in percent when each choice is ranked by its
// log-probability per byte instead of its sum. Records without per-byte
// scores count as wrong.
func AccNorm(items []runfile.Item) float64 {
	if len(items) == 0 {
		return 0
	}
	right := 0
	for i := range items {
		if n := items[i].Norm; len(n) > 0 {
			if pred, _ := runfile.Pick(n); pred == items[i].Answer {
				right++
			}
		}
	}
	return 100 * float64(right) / float64(len(items))
}

// WriteText prints the summary for people: the headline, then each type
// and level with its chance and item count.
func (s Summary) WriteText(w io.Writer) error {
	var err error
	p := func(format string, a ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, a...)
		}
	}
	p("probes: accuracy %.1f%% (%d/%d items, chance %.1f%%, ties %d), acc_norm %.1f%%\n",
		s.Accuracy, s.Correct, s.Items, s.Chance, s.Ties, s.AccNorm)
	if s.Margin != nil {
		p("margin %.4f nats per byte", *s.Margin)
		if ci := s.MarginCI; ci != nil {
			p(", 95%% interval [%.4f, %.4f]", ci[0], ci[1])
		}
		p(" (answer minus best wrong choice, per UTF-8 byte of \" \"+choice)\n")
	}
	p("%-16s %9s %8s %9s %7s %5s\n", "group", "accuracy", "chance", "constant", "items", "ties")
	for _, k := range runfile.SortedKeys(s.ByType) {
		g := s.ByType[k]
		constant := "-"
		if c, ok := s.Dataset.Constant[k]; ok {
			constant = fmt.Sprintf("%.1f%%", c)
			if g.Accuracy <= c {
				constant += " !"
			}
		}
		p("%-16s %8.1f%% %7.1f%% %9s %7d %5d\n", k, g.Accuracy, g.Chance, constant, g.Items, g.Ties)
		for _, lk := range runfile.SortedKeys(s.ByLevel) {
			if lg := s.ByLevel[lk]; strings.HasPrefix(lk, k+"/") {
				p("  %-14s %8.1f%% %7.1f%% %9s %7d %5d\n", lk, lg.Accuracy, lg.Chance, "", lg.Items, lg.Ties)
			}
		}
	}
	if v := s.Variants; v != nil {
		p("prompt variants, on the %d items each scored (the headline is the published template's):\n", v.Items)
		for i, x := range v.Variants {
			p("  %-10s %6.1f%%", x.Variant, x.Accuracy)
			if i > 0 {
				p("  %+.1f points [%+.1f, %+.1f] vs published", x.Delta, x.CI[0], x.CI[1])
			}
			p("\n")
		}
		p("  spread: range (max - min) %.1f points, standard deviation %.1f\n", v.Range, v.SD)
	}
	if len(s.Dataset.Constant) > 0 {
		p("constant: the best accuracy of always giving the same answer (text or position); ! marks a type this model does not beat\n")
	}
	if s.Cost != nil {
		if line := evals.StopLine(s.Sequential, *s.Cost, "items"); line != "" {
			p("%s\n", line)
		}
	}
	if s.Reused != nil {
		p("%s\n", s.Reused.Line())
	}
	for _, n := range s.Notes {
		p("note: %s\n", n)
	}
	p("run %s, %.1fs\n", s.Run, s.Seconds)
	return err
}
