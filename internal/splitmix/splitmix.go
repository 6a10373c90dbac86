// Package splitmix is the SplitMix64 generator (Steele, Lea and Flood,
// 2014). It is tiny and fully specified, so a seed means the same sequence
// on every machine and Go version: the probe suite, the sample selection
// and the bootstrap streams all rely on that, which no library generator
// promises across releases.
package splitmix

const golden = 0x9e3779b97f4a7c15 // 2^64 / the golden ratio, the increment

// Mix scrambles x into a well-spread 64-bit value: the output a Source in
// state x gives next.
func Mix(x uint64) uint64 {
	z := x + golden
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Source is a SplitMix64 stream.
type Source struct{ state uint64 }

// New starts a stream at seed.
func New(seed uint64) *Source { return &Source{state: seed} }

// Uint64 returns the next value.
func (s *Source) Uint64() uint64 {
	z := Mix(s.state)
	s.state += golden
	return z
}

// Below returns a uniform value in [0, n) by rejection, without modulo
// bias. n must not be 0.
func (s *Source) Below(n uint64) uint64 {
	limit := -n % n // 2^64 mod n: values under it would bias the result
	for {
		if v := s.Uint64(); v >= limit {
			return v % n
		}
	}
}
