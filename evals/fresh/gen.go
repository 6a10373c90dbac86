package fresh

import (
	"fmt"
	"math"
	"strings"
)

// genWords are what GenerateDocs builds text from: English words and a
// few multi-byte ones so byte counts and token counts differ.
var genWords = strings.Fields(`the of and to in is that for it as was with be by on not he this are or
his from at which but have an they you were her she there been one all we their has would when if
so no will more can about what up out them into time some could other then only its over new like
model window token context score byte stride batch engine data text run file
naïve café über straße señal ñandú été déjà Zürich København 東京 日本語 текст данные भाषा पाठ λόγος €`)

// GenerateDocs makes n documents of sizes spread log-uniformly between
// minBytes and maxBytes, the same for the same seed: benchmark and test
// input with short and long documents, including multi-byte UTF-8. Sources
// are "short" (under 2 KB) and "long".
func GenerateDocs(seed int64, n, minBytes, maxBytes int) []Document {
	rng := &genRand{state: uint64(seed)}
	docs := make([]Document, n)
	for i := range docs {
		f := rng.float()
		size := int(math.Exp(math.Log(float64(minBytes)) + f*(math.Log(float64(maxBytes))-math.Log(float64(minBytes)))))
		var b strings.Builder
		for b.Len() < size {
			if b.Len() > 0 {
				if rng.below(12) == 0 {
					b.WriteString(".\n")
				} else {
					b.WriteByte(' ')
				}
			}
			b.WriteString(genWords[rng.below(uint64(len(genWords)))])
		}
		src := "long"
		if b.Len() < 2048 {
			src = "short"
		}
		docs[i] = Document{ID: fmt.Sprintf("gen-%05d", i), Text: b.String(), Source: src}
	}
	return docs
}

// MixedBenchDocs is the Fresh Text benchmark's mixed set: n documents of
// 100 B to 40 KB (BENCHMARKS.md). The first k are the same for any n >= k,
// so smaller runs take a prefix of the same set.
func MixedBenchDocs(n int) []Document { return GenerateDocs(2026, n, 100, 40000) }

// genRand is a counter hashed by a 64-bit mixer: our own, so the documents
// do not change with the Go version.
type genRand struct{ state uint64 }

func (g *genRand) next() uint64 {
	g.state += 0x9e3779b97f4a7c15
	z := g.state
	z ^= z >> 33
	z *= 0xff51afd7ed558ccd
	z ^= z >> 33
	return z
}

func (g *genRand) below(n uint64) uint64 { return g.next() % n }

func (g *genRand) float() float64 { return float64(g.next()>>11) / (1 << 53) }
