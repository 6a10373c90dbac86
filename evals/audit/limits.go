package audit

import (
	"fmt"
	"strconv"
	"strings"
)

// Limits is --max-degradation: how much worse than the reference the
// artifact may score before the audit fails. A limit is exceeded only when
// the loss is larger than it and significant (the paired interval
// excludes zero on the worse side), so noise alone never fails an audit.
type Limits struct {
	// BPB is the largest increase of Fresh Text bits per byte allowed.
	BPB float64 `json:"bpb"`
	// Accuracy is the largest drop of Probe Suite accuracy allowed, in
	// percentage points.
	Accuracy float64 `json:"accuracy"`
}

// DefaultLimits is the one home of the defaults: a hundredth of a bit per
// byte (about what q8_0 costs a 135M model, well under q4_0's loss) and
// two points of accuracy.
var DefaultLimits = Limits{BPB: 0.01, Accuracy: 2}

// ParseLimits reads "bpb=0.01,accuracy=2" (either part may be left out,
// keeping its default); an empty string gives DefaultLimits.
func ParseLimits(s string) (Limits, error) {
	l := DefaultLimits
	if strings.TrimSpace(s) == "" {
		return l, nil
	}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return Limits{}, fmt.Errorf("max-degradation %q: part %q is not key=value (want bpb=0.01,accuracy=2)", s, part)
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || x < 0 || x != x {
			return Limits{}, fmt.Errorf("max-degradation %q: %s=%q is not a number >= 0", s, k, v)
		}
		switch strings.TrimSpace(k) {
		case "bpb":
			l.BPB = x
		case "accuracy":
			l.Accuracy = x
		default:
			return Limits{}, fmt.Errorf("max-degradation %q: unknown key %q (want bpb or accuracy)", s, k)
		}
	}
	return l, nil
}

// String writes the limits as ParseLimits reads them.
func (l Limits) String() string {
	return "bpb=" + strconv.FormatFloat(l.BPB, 'f', -1, 64) + ",accuracy=" + strconv.FormatFloat(l.Accuracy, 'f', -1, 64)
}
