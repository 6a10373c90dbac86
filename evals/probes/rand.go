package probes

// rng is a splitmix64 generator. The suite must be byte-identical on every
// machine and Go version, so it uses no library generator whose stream could
// change between releases.
type rng struct{ state uint64 }

func newRNG(seed uint64) *rng { return &rng{state: seed} }

func (r *rng) uint64() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// intn returns a uniform integer in [0, n) without modulo bias.
func (r *rng) intn(n int) int {
	if n <= 0 {
		panic("probes: intn of a non-positive bound")
	}
	bound := uint64(n)
	threshold := -bound % bound // 2^64 mod bound: values below it are biased
	for {
		if x := r.uint64(); x >= threshold {
			return int(x % bound)
		}
	}
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
	mix := &rng{state: uint64(seed) ^ h ^ uint64(level)<<56}
	return mix.uint64()
}
