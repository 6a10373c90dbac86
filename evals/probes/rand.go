package probes

import "github.com/udgamlabs/udgam-ci/internal/splitmix"

// rng draws the suite's numbers from SplitMix64: the suite must be
// byte-identical on every machine and Go version.
type rng struct{ src *splitmix.Source }

func newRNG(seed uint64) *rng { return &rng{src: splitmix.New(seed)} }

// intn returns a uniform integer in [0, n) without modulo bias.
func (r *rng) intn(n int) int {
	if n <= 0 {
		panic("probes: intn of a non-positive bound")
	}
	return int(r.src.Below(uint64(n)))
}

// between returns a uniform integer in [lo, hi].
func (r *rng) between(lo, hi int) int { return lo + r.intn(hi-lo+1) }

// pick returns one element of s.
func pick[T any](r *rng, s []T) T { return s[r.intn(len(s))] }

// shuffle permutes s in place (Fisher-Yates).
func shuffle[T any](r *rng, s []T) {
	for i := len(s) - 1; i > 0; i-- {
		j := r.intn(i + 1)
		s[i], s[j] = s[j], s[i]
	}
}

// streamSeed derives the seed of one type and level from the run's seed, so
// each level's items depend only on (seed, type, level): generating frontier
// types as well never changes the core items.
func streamSeed(seed int64, typ string, level int) uint64 {
	h := uint64(14695981039346656037) // FNV-1a over the type name
	for i := 0; i < len(typ); i++ {
		h ^= uint64(typ[i])
		h *= 1099511628211
	}
	return splitmix.Mix(uint64(seed) ^ h ^ uint64(level)<<56)
}
