package runfile

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Limits on what a run may hold. Together they keep every sum over a run,
// and over any bootstrap resample of it (up to MaxRecords copies of its
// largest record), exact in int64 and finite in float64: 2^22 records of
// at most 2^40 bytes sum below 2^63.
const (
	MaxRecords = 1 << 22 // records in one run
	MaxCount   = 1 << 40 // bytes, tokens or windows of one document or item
	MaxBits    = 1 << 50 // bits of one document: over 1,000 bits per byte of a GiB
	// MaxLogprob bounds the magnitude of one choice's log-probability.
	MaxLogprob = 1e12
	// LogprobSlack is how far above 0 a summed log-probability may be:
	// float rounding in a log-softmax leaves tiny positive values.
	LogprobSlack = 1e-3
)

// Dates a run may have started at, checked where a clock is at hand (the
// report server): udgam-ci runs did not exist before MinStartedAt, and a
// start more than MaxClockSkew ahead of now is a wrong clock.
var MinStartedAt = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// MaxClockSkew is how far in the future a run's start may be.
const MaxClockSkew = 24 * time.Hour

// Validate checks what every reader relies on.
func (h *Header) Validate() error {
	if h.Schema != Schema {
		return fmt.Errorf("schema is %q, want %q", h.Schema, Schema)
	}
	if h.ID == "" {
		return errors.New("header has no run id")
	}
	if h.Test != TestFresh && h.Test != TestProbes {
		return fmt.Errorf("test is %q, want %q or %q", h.Test, TestFresh, TestProbes)
	}
	if s := h.Sequential; s != nil {
		switch {
		case s.Rule != RuleUntilDecided:
			return fmt.Errorf("sequential rule is %q, want %q", s.Rule, RuleUntilDecided)
		case !(s.Level > 0 && s.Level < 1):
			return fmt.Errorf("sequential level %v, want between 0 and 1", s.Level)
		case !(s.MinEffect >= 0) || math.IsInf(s.MinEffect, 0):
			return fmt.Errorf("sequential min_effect %v, want a number from 0", s.MinEffect)
		case s.Total < 1 || s.Total > MaxRecords:
			return fmt.Errorf("sequential total %d, want 1 to %d", s.Total, MaxRecords)
		case s.Bytes < 0 || s.Bytes > MaxRecords*MaxCount:
			return fmt.Errorf("sequential set of %d bytes, want 0 to %d", s.Bytes, int64(MaxRecords*MaxCount))
		case s.Stop != nil && (s.Stop.Scored < 0 || s.Stop.Scored > s.Total):
			return fmt.Errorf("sequential stop after %d of %d records", s.Stop.Scored, s.Total)
		case s.Stop != nil && (math.IsNaN(s.Stop.CI[0]) || math.IsNaN(s.Stop.CI[1]) || s.Stop.CI[0] > s.Stop.CI[1]):
			return fmt.Errorf("sequential stop interval %v is not an interval", s.Stop.CI)
		}
	}
	if r := h.Reused; r != nil && (r.From == "" || r.Fingerprint == "" || r.Fingerprint != h.Model.Fingerprint) {
		return fmt.Errorf("reused records: from run %q of model fingerprint %q, the model's is %q", r.From, r.Fingerprint, h.Model.Fingerprint)
	}
	return h.checkNumbers()
}

// atLeast is one header number and the least value that means something.
type atLeast struct {
	key      string
	val, min int64
}

// checkNumbers refuses a header count or setting below its least
// meaningful value: a window of -1 or a count of -1 items is a bug or an
// attack, never a setting, and pages would show it as one.
func (h *Header) checkNumbers() error {
	fields := []atLeast{
		{"dataset.count", int64(h.Dataset.Count), 0},
		{"settings.bos_id", int64(h.Settings.BOSID), -1}, // -1: the tokenizer has no BOS
		{"settings.window", int64(h.Settings.Window), 0},
		{"settings.stride", int64(h.Settings.Stride), 0},
		{"runtime.threads", int64(h.Runtime.Threads), 0},
		{"runtime.batch_size", int64(h.Runtime.BatchSize), 0},
		{"runtime.context", int64(h.Runtime.Context), 0},
	}
	if p := h.Settings.TextPrep; p != nil {
		fields = append(fields, atLeast{"settings.text_prep.added_tokens", int64(p.AddedTokens), 0})
	}
	if h.Sample != nil {
		fields = append(fields, atLeast{"sample.n", int64(h.Sample.N), 0})
	}
	if h.Shard != nil {
		fields = append(fields, atLeast{"shard.index", int64(h.Shard.Index), 1}, atLeast{"shard.count", int64(h.Shard.Count), 1})
	}
	if c := h.Contamination; c != nil {
		fields = append(fields, atLeast{"contamination.n", int64(c.N), 0}, atLeast{"contamination.checked", int64(c.Checked), 0})
		if math.IsNaN(c.MinFraction) || c.MinFraction < 0 || c.MinFraction >= 1 {
			return fmt.Errorf("header: contamination.min_fraction %v: want 0 <= f < 1", c.MinFraction)
		}
	}
	for _, f := range fields {
		if f.val < f.min {
			return fmt.Errorf("header: %s %d: want %d or more", f.key, f.val, f.min)
		}
	}
	for typ, v := range h.Dataset.Constant {
		if math.IsNaN(v) || v < 0 || v > 100 {
			return fmt.Errorf("header: dataset.constant[%q] %v: want a percentage from 0 to 100", typ, v)
		}
	}
	return nil
}

// CheckStarted refuses a start time outside [MinStartedAt, now+MaxClockSkew].
func (h *Header) CheckStarted(now time.Time) error {
	latest := now.Add(MaxClockSkew)
	switch {
	case h.StartedAt.IsZero():
		return fmt.Errorf("run %s: started_at is missing", h.ID)
	case h.StartedAt.Before(MinStartedAt) || h.StartedAt.After(latest):
		return fmt.Errorf("run %s: started_at %s is outside %s to %s (a wrong clock?)", h.ID,
			h.StartedAt.UTC().Format(time.RFC3339), MinStartedAt.Format(time.DateOnly), latest.UTC().Format(time.RFC3339))
	}
	return nil
}

// Validate checks one document record: counts within MaxCount, bits a
// finite number within MaxBits, and bits counted only over scored tokens
// and bytes (a document whose one token went unscored has all three 0).
func (d *Doc) Validate() error {
	switch {
	case d.ID == "":
		return errors.New("document record has no id")
	case d.Bytes < 0 || d.Tokens < 0 || d.Windows < 0 || d.TextBytes < 0:
		return fmt.Errorf("document %s: negative count", d.ID)
	case d.Bytes > MaxCount || d.Tokens > MaxCount || d.Windows > MaxCount || d.TextBytes > MaxCount:
		return fmt.Errorf("document %s: a count is over %d", d.ID, int64(MaxCount))
	case math.IsNaN(d.Bits) || d.Bits < 0 || d.Bits > MaxBits:
		return fmt.Errorf("document %s: bits %v is not a number from 0 to %g", d.ID, d.Bits, float64(MaxBits))
	case (d.Bytes == 0) != (d.Tokens == 0):
		return fmt.Errorf("document %s: %d tokens scored over %d bytes: both or neither must be 0", d.ID, d.Tokens, d.Bytes)
	case d.Tokens == 0 && d.Bits != 0:
		return fmt.Errorf("document %s: %v bits with no token scored", d.ID, d.Bits)
	case d.TextBytes != 0 && d.TextBytes < d.Bytes:
		return fmt.Errorf("document %s: %d bytes scored of a %d-byte text", d.ID, d.Bytes, d.TextBytes)
	}
	return d.checkSpans()
}

// Validate checks one item record: finite log-probabilities at most
// LogprobSlack above 0, indexes in range, and a prediction that is what
// Pick makes of the log-probabilities, so a stored verdict always follows
// from the stored scores.
func (it *Item) Validate() error {
	switch {
	case it.ID == "":
		return errors.New("item record has no id")
	case it.Level < 0:
		return fmt.Errorf("item %s: level %d: want 0 or more", it.ID, it.Level)
	case len(it.Logprobs) < 2:
		return fmt.Errorf("item %s: %d choices, want at least 2", it.ID, len(it.Logprobs))
	case it.Pred < 0 || it.Pred >= len(it.Logprobs):
		return fmt.Errorf("item %s: pred %d out of range", it.ID, it.Pred)
	case it.Answer < 0 || it.Answer >= len(it.Logprobs):
		return fmt.Errorf("item %s: answer %d out of range", it.ID, it.Answer)
	case it.Correct != (it.Pred == it.Answer):
		return fmt.Errorf("item %s: correct=%v disagrees with pred %d and answer %d", it.ID, it.Correct, it.Pred, it.Answer)
	case len(it.Norm) != 0 && len(it.Norm) != len(it.Logprobs):
		return fmt.Errorf("item %s: %d per-byte scores for %d choices", it.ID, len(it.Norm), len(it.Logprobs))
	case it.Variant != "" && (it.ItemID() == it.ID || it.ItemID() == ""):
		return fmt.Errorf("item %s: a record of variant %q must have the id <item id>@%s", it.ID, it.Variant, it.Variant)
	case it.Tokens < 0 || it.Tokens > MaxCount:
		return fmt.Errorf("item %s: tokens %d out of range", it.ID, it.Tokens)
	}
	for i, lp := range it.Logprobs {
		if math.IsNaN(lp) || lp > LogprobSlack || lp < -MaxLogprob {
			return fmt.Errorf("item %s: choice %d log-probability %v is not a number from %g to 0", it.ID, i, lp, -MaxLogprob)
		}
	}
	for i, v := range it.Norm {
		if math.IsNaN(v) || v > LogprobSlack || v < -MaxLogprob {
			return fmt.Errorf("item %s: choice %d per-byte log-probability %v is not a number from %g to 0", it.ID, i, v, -MaxLogprob)
		}
	}
	if pred, tie := Pick(it.Logprobs); pred != it.Pred || tie != it.Tie {
		return fmt.Errorf("item %s: pred %d (tie %v) is not what its log-probabilities pick (%d, tie %v)", it.ID, it.Pred, it.Tie, pred, tie)
	}
	return nil
}

// Pick is the choice a probe item's log-probabilities make: the first
// index of the largest, and whether another index holds the same value.
func Pick(logprobs []float64) (int, bool) {
	best, tie := 0, false
	for i := 1; i < len(logprobs); i++ {
		switch {
		case logprobs[i] > logprobs[best]:
			best, tie = i, false
		case logprobs[i] == logprobs[best]:
			tie = true
		}
	}
	return best, tie
}
