package numfmt

import (
	"math"
	"testing"
)

func TestCount(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{
		0:             "0",
		7:             "7",
		999:           "999",
		1000:          "1,000",
		1670:          "1,670",
		-1670:         "-1,670",
		999999:        "999,999",
		1000000:       "1,000,000",
		-100:          "-100",
		math.MinInt64: "-9,223,372,036,854,775,808",
	} {
		if got := Count(n); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}
