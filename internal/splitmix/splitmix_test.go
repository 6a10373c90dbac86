package splitmix_test

import (
	"testing"

	"github.com/udgamlabs/udgam-ci/internal/splitmix"
)

// Pinned: a change here changes the generated probe set, every sample
// selection and every bootstrap interval.
func TestKnownValues(t *testing.T) {
	t.Parallel()
	// SplitMix64 seeded with 0: its published first outputs.
	s := splitmix.New(0)
	for i, want := range []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f} {
		if got := s.Uint64(); got != want {
			t.Fatalf("output %d = %#x, want %#x", i, got, want)
		}
		if got := splitmix.Mix(uint64(i) * 0x9e3779b97f4a7c15); got != want {
			t.Errorf("Mix(state %d) = %#x, want %#x", i, got, want)
		}
	}
	b := splitmix.New(42)
	var got []uint64
	for range 8 {
		got = append(got, b.Below(10))
	}
	want := []uint64{}
	c := splitmix.New(42)
	for range 8 {
		want = append(want, c.Uint64()%10) // 10 divides into 2^64 with a tiny rejection zone, never hit here
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("Below(10) = %v, want %v", got, want)
		}
	}
}
