package main

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/compare/sequential"
	"github.com/udgamlabs/udgam-ci/evals/fresh"
	"github.com/udgamlabs/udgam-ci/internal/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Through llama.cpp, a sequential run over spans scores each window alone
// (packed with other documents' windows) exactly as the whole run scores
// it: a quantized transformer (whose bits packing may not change, issue
// 40) against its own whole run never sees a span change, goes to the
// last span, and its spans put back together are the whole run's records
// to the bit; compare --json says so. (A float32 model's windows move by
// up to float32 rounding with the packing, within the engine's 1e-4 nats.)
func TestScoreFreshSpansThroughLlama(t *testing.T) {
	t.Parallel()
	needEngine(t)
	dir := t.TempDir()
	m, err := testmodel.RandomLlama(5, testmodel.DefaultShape())
	if err != nil {
		t.Fatal(err)
	}
	f32, gguf := filepath.Join(dir, "llama.gguf"), filepath.Join(dir, "q8_0.gguf")
	if err := testmodel.WriteLlamaGGUF(f32, m); err != nil {
		t.Fatal(err)
	}
	if err := engineQuantize(f32, gguf, "q8_0", 1); err != nil {
		t.Fatal(err)
	}
	data := writeDocs(t, dir, fresh.GenerateDocs(4, 12, 100, 700))
	score := func(out string, more ...string) {
		t.Helper()
		e, _, stderr := freshTestEnv()
		args := append([]string{"score", "fresh", "--model", gguf, "--data", data, "--out", out, "--window", "64", "--stride", "32", "--threads", "1"}, more...)
		if code := run(e, args); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
	}
	base, head := filepath.Join(dir, "base.jsonl"), filepath.Join(dir, "head.jsonl")
	score(base)
	score(head, "--until", "decided", "--baseline", base, "--min-effect", "0")
	b, err := runfile.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	h, err := runfile.ReadFile(head)
	if err != nil {
		t.Fatal(err)
	}
	q := h.Header.Sequential
	if q == nil || q.Unit != runfile.UnitSpan || q.Stop == nil || q.Stop.Reason != sequential.Complete || h.Len() != q.Total || q.Total <= len(b.Docs) {
		t.Fatalf("sequential header %+v with %d records, want complete over every span (more than the %d documents)", q, h.Len(), len(b.Docs))
	}
	if joined := runfile.JoinSpans(h.Docs); !sameDocSet(joined, b.Docs) {
		t.Errorf("the spans put back together differ from the whole run's records")
	}
	c := compareJSON(t, base, head)
	if c.Delta != 0 || c.Sequential == nil || c.Sequential.Reason != sequential.Complete || c.Sequential.Unit != runfile.UnitSpan || c.N != len(b.Docs) {
		t.Errorf("compare: delta %v over %d, sequential %+v", c.Delta, c.N, c.Sequential)
	}
}

// sameDocSet says whether a and b hold the same records, in any order.
func sameDocSet(a, b []runfile.Doc) bool {
	if len(a) != len(b) {
		return false
	}
	byID := map[string]runfile.Doc{}
	for _, d := range a {
		byID[d.ID] = d
	}
	for _, d := range b {
		if !reflect.DeepEqual(byID[d.ID], d) {
			return false
		}
	}
	return true
}

// compareJSON is `udgam-ci compare BASE HEAD --json`, decoded.
func compareJSON(t *testing.T, base, head string) compare.Comparison {
	t.Helper()
	e, stdout, stderr := freshTestEnv()
	if code := run(e, []string{"compare", base, head, "--json"}); code != 0 {
		t.Fatalf("compare: exit %d: %s", code, stderr.String())
	}
	var c compare.Comparison
	if err := json.Unmarshal(stdout.Bytes(), &c); err != nil {
		t.Fatal(err)
	}
	return c
}
