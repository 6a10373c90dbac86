package contamination

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/udgamlabs/udgam-ci/evals/fresh"
	"github.com/udgamlabs/udgam-ci/evals/probes"
)

// benchCorpus writes files of English-like JSON Lines and Parquet text
// (about 5.5 bytes a word) once per process.
func benchCorpus(b *testing.B, files, mbEach int) (jsonl, pq []string) {
	b.Helper()
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("udgam-contamination-bench-%d-%d", files, mbEach))
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := vocabulary(rng, 50000)
	os.MkdirAll(dir, 0o755)
	for f := range files {
		jp := filepath.Join(dir, fmt.Sprintf("part-%02d.jsonl", f))
		pp := filepath.Join(dir, fmt.Sprintf("part-%02d.parquet", f))
		jsonl, pq = append(jsonl, jp), append(pq, pp)
		if _, err := os.Stat(pp); err == nil {
			continue
		}
		var docs []string
		for size := 0; size < mbEach<<20; {
			d := randomText(rng, vocab, 100+rng.IntN(900))
			docs = append(docs, d)
			size += len(d)
		}
		writeJSONL(b, jp, docs)
		var rows []parquetDoc
		for i := range docs {
			rows = append(rows, parquetDoc{ID: i, Content: &docs[i]})
		}
		if err := parquet.WriteFile(pp, rows); err != nil {
			b.Fatal(err)
		}
	}
	return jsonl, pq
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// BenchmarkScan reports training words scanned per second against the
// core probe set, per format, on one core and on all.
func BenchmarkScan(b *testing.B) {
	core, err := probes.Core()
	if err != nil {
		b.Fatal(err)
	}
	ix, err := NewIndex(ProbeItems(core), DefaultN)
	if err != nil {
		b.Fatal(err)
	}
	workers := runtime.NumCPU()
	jsonl, pq := benchCorpus(b, workers, 32)
	for _, tc := range []struct {
		name  string
		files []string
		field string
	}{{"jsonl", jsonl, "text"}, {"parquet", pq, "content"}} {
		for _, w := range []int{1, workers} {
			b.Run(fmt.Sprintf("%s/workers=%d", tc.name, w), func(b *testing.B) {
				inputs, _, err := LocalInputs(tc.files[:w])
				if err != nil {
					b.Fatal(err)
				}
				var words, bytes int64
				cpu0 := cpuSeconds()
				for b.Loop() {
					r, err := Scan(context.Background(), ix, inputs, Options{TextField: tc.field, Workers: w})
					if err != nil {
						b.Fatal(err)
					}
					words, bytes = r.Words, r.Bytes
				}
				secs := b.Elapsed().Seconds() / float64(b.N)
				cpu := (cpuSeconds() - cpu0) / float64(b.N)
				b.ReportMetric(float64(words)/secs, "words/s")
				b.ReportMetric(float64(bytes)/secs/1e6, "MB/s")
				// Per CPU-second of the process: what a core does, even on a
				// machine shared with other work.
				b.ReportMetric(float64(words)/cpu, "words/cpu-s")
			})
		}
	}
}

// BenchmarkIndex reports the memory the index of a full-size test set
// takes: the 2,000 core probe items and 1,670 documents of the mixed
// benchmark set (the reference's size), which bounds the scan's memory.
func BenchmarkIndex(b *testing.B) {
	core, err := probes.Core()
	if err != nil {
		b.Fatal(err)
	}
	items := ProbeItems(core)
	items = append(items, FreshItems(&fresh.Data{Docs: fresh.MixedBenchDocs(1670)})...)
	var ms0, ms1 runtime.MemStats
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&ms0)
		ix, err := NewIndex(items, DefaultN)
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&ms1)
		b.ReportMetric(float64(ms1.HeapAlloc-ms0.HeapAlloc)/(1<<20), "MiB")
		b.ReportMetric(float64(len(ix.grams)), "ngrams")
		runtime.KeepAlive(ix)
	}
}
