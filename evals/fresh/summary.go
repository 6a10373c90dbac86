package fresh

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Summary is the --json output of `score fresh`, plus a few
// fields that say what was scored.
type Summary struct {
	Test          string                         `json:"test"`
	BPB           float64                        `json:"bpb"`
	Bits          float64                        `json:"bits"`
	Bytes         int                            `json:"bytes"`
	Docs          int                            `json:"docs"`
	Tokens        int                            `json:"tokens"`
	BytesPerToken float64                        `json:"bytes_per_token"`
	BySource      map[string]*runfile.FreshGroup `json:"by_source"`
	Settings      runfile.Settings               `json:"settings"`
	Dataset       string                         `json:"dataset"`
	Smoke         bool                           `json:"smoke"`
	RunID         string                         `json:"run_id"`
	Out           string                         `json:"out"`
	Seconds       float64                        `json:"seconds"`
	// TokensPerSecond counts tokens scored by this invocation only.
	TokensPerSecond float64 `json:"tokens_per_second"`
	// Sequential is the run's --until decided record, where it stopped,
	// and Cost what its records are of the set (records and bytes).
	Sequential *runfile.Sequential `json:"sequential,omitempty"`
	Cost       *runfile.Cost       `json:"cost,omitempty"`
	// Reused is set when the model was unchanged from the baseline's and
	// nothing was scored.
	Reused *runfile.Reused `json:"reused,omitempty"`
}

// NewSummary builds the summary of a finished run.
func NewSummary(r Result) Summary {
	s := r.Summary
	out := Summary{
		Test:     runfile.TestFresh,
		BPB:      s.BPB,
		Bits:     s.Bits,
		Bytes:    s.Bytes,
		Docs:     s.Docs,
		Tokens:   s.Tokens,
		BySource: s.BySource,
		Settings: r.Run.Header.Settings,
		Dataset:  r.Run.Header.Dataset.Name,
		Smoke:    r.Run.Header.Dataset.Smoke,
		RunID:    r.Run.Header.ID,
		Out:      r.Out,
		Seconds:  r.Seconds,

		Sequential: r.Run.Header.Sequential,
		Cost:       evals.SequentialCost(r.Run),
		Reused:     r.Run.Header.Reused,
	}
	if s.Tokens > 0 {
		out.BytesPerToken = float64(s.Bytes) / float64(s.Tokens)
	}
	if r.Seconds > 0 {
		out.TokensPerSecond = float64(r.Tokens) / r.Seconds
	}
	return out
}

// WriteJSON prints the summary as one JSON object.
func WriteJSON(w io.Writer, r Result) error {
	b, err := json.Marshal(NewSummary(r))
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// WriteText prints the summary for people.
func WriteText(w io.Writer, r Result) error {
	s := NewSummary(r)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	h := r.Run.Header
	fmt.Fprintf(tw, "Fresh Text\t%s\n", h.Model.Name)
	fmt.Fprintf(tw, "data\t%s %s (sha256 %s)\n", s.Dataset, h.Dataset.Revision, short(h.Dataset.SHA256))
	if s.Smoke {
		fmt.Fprintf(tw, "warning\tSMOKE SAMPLE, NOT THE BENCHMARK: this score says nothing about the model\n")
	}
	fmt.Fprintf(tw, "bits per byte\t%.4f\n", s.BPB)
	fmt.Fprintf(tw, "documents\t%d\n", s.Docs)
	fmt.Fprintf(tw, "tokens scored\t%d\n", s.Tokens)
	fmt.Fprintf(tw, "bytes\t%d\n", s.Bytes)
	fmt.Fprintf(tw, "bytes per token\t%.3f\n", s.BytesPerToken)
	fmt.Fprintf(tw, "seconds\t%.1f\n", s.Seconds)
	fmt.Fprintf(tw, "scored tokens/s\t%.1f\n", s.TokensPerSecond)
	bos := "BOS first"
	if !h.Settings.AddBOS {
		bos = "no BOS: first token of each document unscored, its bytes left out"
	}
	fmt.Fprintf(tw, "settings\twindow %d, stride %d, %s (--add-bos %s)\n", h.Settings.Window, h.Settings.Stride, bos, h.Settings.BOSMode)
	if h.Sample != nil {
		fmt.Fprintf(tw, "sample\t%d documents, seed %d\n", len(h.Sample.IDs), h.Sample.Seed)
	}
	for _, n := range evals.SelectionNotes(h, "documents") {
		fmt.Fprintf(tw, "note\t%s\n", n)
	}
	if h.Shard != nil {
		fmt.Fprintf(tw, "shard\t%d/%d (join the shards with `udgam-ci merge`)\n", h.Shard.Index, h.Shard.Count)
	}
	if r.Resumed {
		fmt.Fprintf(tw, "resumed\tyes (%d documents scored before)\n", r.Skipped)
	}
	if s.Cost != nil {
		if line := evals.StopLine(h.Sequential, *s.Cost, "documents"); line != "" {
			fmt.Fprintf(tw, "sequential\t%s\n", line)
		}
	}
	if s.Reused != nil {
		fmt.Fprintf(tw, "reused\t%s\n", s.Reused.Line())
	}
	fmt.Fprintf(tw, "run file\t%s\n", r.Out)
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(s.BySource) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "source\tdocs\ttokens\tbytes\tbpb\t")
	for _, k := range runfile.SortedKeys(s.BySource) {
		g := s.BySource[k]
		name := k
		if name == "" {
			name = "(none)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.4f\t\n", name, g.Docs, g.Tokens, g.Bytes, g.BPB)
	}
	return tw.Flush()
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
