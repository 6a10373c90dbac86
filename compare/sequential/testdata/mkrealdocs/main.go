// Command mkrealdocs writes ../realdocs.csv: prefixes of real files on a
// Linux machine (man pages, C headers, Go sources, data tables, docs),
// each scored by two byte-bigram models trained on different text, for
// the simulations of compare/sequential. Run it from compare/sequential:
//
//	go run ./testdata/mkrealdocs > testdata/realdocs.csv
//
// Two pairs of models are the heads and bases of two comparisons: two
// unlike models (trained on C headers and on Go sources), and two like
// ones (trained on a third and a sixth of the headers). Their per-document
// differences are what `--until decided` accumulates. The set is kept as
// recorded, so the simulations do not depend on this machine.
package main

import (
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// bigram is a byte-bigram model with add-k smoothing.
type bigram struct {
	n   [256][256]float64
	row [256]float64
}

func (m *bigram) train(b []byte) {
	for i := 1; i < len(b); i++ {
		m.n[b[i-1]][b[i]]++
		m.row[b[i-1]]++
	}
}

// bits is the document's code length under m: the first byte uniform.
func (m *bigram) bits(b []byte, k float64) float64 {
	bits := 8.0
	for i := 1; i < len(b); i++ {
		p := (m.n[b[i-1]][b[i]] + k) / (m.row[b[i-1]] + 256*k)
		bits -= math.Log2(p)
	}
	return bits
}

// files lists regular files under root, sorted.
func files(root string) []string {
	var out []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func read(p string, n int) []byte {
	b, err := os.ReadFile(p)
	if err != nil || len(b) < 100 {
		return nil
	}
	return b[:min(n, len(b))]
}

func main() {
	goroot := "/usr/local/go"
	var head, base, small, large bigram
	// the head learned from C headers, the base from Go's own sources:
	// two unlike models; and two like ones, as two checkpoints of one
	// model are, one trained on a sixth of the headers, one on a third
	for i, p := range files("/usr/include") {
		if i%3 == 0 {
			if b := read(p, 1<<20); b != nil {
				head.train(b)
				large.train(b)
				if i%6 == 0 {
					small.train(b)
				}
			}
		}
	}
	for i, p := range files(filepath.Join(goroot, "src")) {
		if i%9 == 0 && strings.HasSuffix(p, ".go") && !strings.Contains(p, "/vendor/") {
			if b := read(p, 1<<20); b != nil {
				base.train(b)
			}
		}
	}
	// documents: files neither model trained on, prefixes of log-uniform
	// length from 100 B to 66 KB (a file shorter than that whole)
	var pool []string
	for _, root := range []string{"/usr/share/doc", "/usr/share/man", "/usr/share/perl", "/usr/share/misc",
		"/usr/share/i18n", filepath.Join(goroot, "doc"), filepath.Join(goroot, "lib"), filepath.Join(goroot, "misc"),
		filepath.Join(goroot, "test")} {
		pool = append(pool, files(root)...)
	}
	seen := map[string]bool{}
	x := uint64(2026)
	fmt.Println("id,bytes,head_bits,base_bits,large_bits,small_bits")
	// one generated table of 66 KB, as real sets hold (neither model
	// trained on it: the base's Go files skip vendored code)
	table := filepath.Join(goroot, "src/vendor/golang.org/x/text/unicode/norm/tables15.0.0.go")
	if b := read(table, 66_000); b != nil {
		fmt.Printf("%s,%d,%.3f,%.3f,%.3f,%.3f\n", table, len(b), head.bits(b, 0.5), base.bits(b, 0.5), large.bits(b, 0.5), small.bits(b, 0.5))
	}
	for n := 1; n < 640 && len(pool) > 0; {
		x = x*6364136223846793005 + 1442695040888963407
		p := pool[(x>>33)%uint64(len(pool))]
		if seen[p] {
			continue
		}
		seen[p] = true
		u := float64((x>>11)&0xfffff) / float64(1<<20)
		b := read(p, int(100*math.Pow(660, u)))
		if b == nil || strings.HasSuffix(p, ".gz") {
			continue
		}
		fmt.Printf("%s,%d,%.3f,%.3f,%.3f,%.3f\n", strings.ReplaceAll(p, ",", "_"), len(b), head.bits(b, 0.5), base.bits(b, 0.5),
			large.bits(b, 0.5), small.bits(b, 0.5))
		n++
	}
}
