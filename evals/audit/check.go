package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"unicode"
	"unicode/utf8"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// MaxReportBytes bounds one audit report: a real one is a few kilobytes
// (its probe types and levels), and the server holds it whole to read it.
const MaxReportBytes = 1 << 20

// ErrTooLarge is a report over MaxReportBytes.
var ErrTooLarge = fmt.Errorf("over the limit of %d bytes for a report", MaxReportBytes)

// Decode reads one audit report (the JSON of `audit artifact --json`) and
// checks it: read as strictly as a run file (runfile.DecodeStrict), a
// field it does not know, a second document after it, or a report that
// contradicts itself is an error naming the problem.
func Decode(r io.Reader, name string) (*Report, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxReportBytes+1))
	if err != nil {
		return nil, fmt.Errorf("audit report %s: %w", name, err) // reading failed: the caller knows why
	}
	if len(b) > MaxReportBytes {
		return nil, fmt.Errorf("audit report %s: %w", name, ErrTooLarge)
	}
	var rep Report
	if err := runfile.DecodeStrict(b, &rep, true); err != nil {
		return nil, fmt.Errorf("audit report %s: %w", name, err)
	}
	if err := rep.Check(); err != nil {
		return nil, fmt.Errorf("audit report %s: %w", name, err)
	}
	return &rep, nil
}

// Check refuses a report that is incomplete or contradicts itself: the
// verdict and the by-type flips are what Judge makes of the report's own
// comparisons and limits, so a report edited by hand (or cut short) is
// refused rather than shown.
func (r *Report) Check() error {
	switch {
	case r.Reference.Name == "":
		return errors.New("reference.name is empty")
	case r.Reference.Dtype == "" || r.Artifact.Dtype == "":
		return errors.New("reference.dtype and artifact.dtype are required")
	case r.Fresh == nil || r.Fresh.Test != runfile.TestFresh || r.Fresh.Metric != compare.MetricBPB:
		return fmt.Errorf("fresh: want the Fresh Text comparison (test %q, metric %q)", runfile.TestFresh, compare.MetricBPB)
	case r.Probes == nil || r.Probes.Test != runfile.TestProbes || r.Probes.Metric != compare.MetricAccuracy:
		return fmt.Errorf("probes: want the Probe Suite comparison (test %q, metric %q)", runfile.TestProbes, compare.MetricAccuracy)
	case r.KL.Tokens < 0 || r.KL.Mean < 0 || r.KL.P99 < 0 || r.KL.Max < r.KL.P99 || r.KL.Max < r.KL.Mean ||
		math.IsInf(r.KL.Max, 0) || r.KL.SameTop < 0 || r.KL.SameTop > 1 || r.KL.Tokens == 0 && r.KL != (KL{}):
		return fmt.Errorf("kl %+v: want tokens, mean and p99 >= 0, max >= p99 and >= mean, finite, same_top in [0, 1], and all zero over no tokens", r.KL)
	case r.Limits.BPB < 0 || r.Limits.Accuracy < 0:
		return fmt.Errorf("limits %s: want numbers >= 0", r.Limits)
	}
	for _, f := range []struct {
		key, val string
		max      int
	}{
		{"reference.file", r.Reference.File, maxFile}, {"artifact.file", r.Artifact.File, maxFile},
		{"reference.dtype", r.Reference.Dtype, maxDtype}, {"artifact.dtype", r.Artifact.Dtype, maxDtype},
		{"quantized", r.Quantized, maxDtype},
	} {
		if err := plainText(f.key, f.val, f.max); err != nil {
			return err
		}
	}
	if v, reasons := verdict(r.Fresh, r.Probes, r.Limits); v != r.Verdict || !reflect.DeepEqual(reasons, r.Reasons) {
		return fmt.Errorf("verdict %q (%q) is not what its comparisons and limits give (%q: %q)", r.Verdict, r.Reasons, v, reasons)
	}
	if want := typeFlips(r.Probes); !sameJSON(want, r.Types) {
		return errors.New("types: the flips by type are not those of the probes comparison")
	}
	return nil
}

// A file name or a type longer than these is no real artifact's, and
// would push every table it is shown in off screen.
const (
	maxFile  = 255
	maxDtype = 32
)

// plainText refuses a name with control or formatting characters (bidi
// overrides and zero-width marks change how the rest of a page reads) or
// longer than max bytes.
func plainText(key, s string, max int) error {
	if len(s) > max {
		return fmt.Errorf("%s: %d bytes, over the %d a name may have", key, len(s), max)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s %q: not UTF-8", key, s)
	}
	for _, c := range s {
		if unicode.IsControl(c) || unicode.Is(unicode.Cf, c) {
			return fmt.Errorf("%s %q: control or formatting character %U", key, s, c)
		}
	}
	return nil
}

// sameJSON compares as the wire does, so a list left out and an empty
// one are the same.
func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}
