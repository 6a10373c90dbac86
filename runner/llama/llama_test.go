package llama

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/udgamlabs/udgam-ci/runner/testmodel"
)

// Test models are written once per test binary: the transformer's GGUF is
// shared by the invariance tests.
var (
	fixturesOnce sync.Once
	fixtureDir   string
	fixtureErr   error
	bigram       *testmodel.Bigram
	tiny         *testmodel.Llama
)

func fixtures(t *testing.T) (bigramPath, llamaPath string) {
	t.Helper()
	fixturesOnce.Do(func() {
		fixtureDir, fixtureErr = os.MkdirTemp("", "udgam-llama-test-")
		if fixtureErr != nil {
			return
		}
		bigram = testmodel.RandomBigram(7)
		if fixtureErr = testmodel.WriteBigramGGUF(filepath.Join(fixtureDir, "bigram.gguf"), bigram); fixtureErr != nil {
			return
		}
		tiny, fixtureErr = testmodel.RandomLlama(11, testmodel.DefaultShape())
		if fixtureErr != nil {
			return
		}
		fixtureErr = testmodel.WriteLlamaGGUF(filepath.Join(fixtureDir, "tiny.gguf"), tiny)
	})
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
	return filepath.Join(fixtureDir, "bigram.gguf"), filepath.Join(fixtureDir, "tiny.gguf")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fixtureDir != "" {
		os.RemoveAll(fixtureDir)
	}
	os.Exit(code)
}

func load(t *testing.T, path string, opts Options) *Model {
	t.Helper()
	m, err := Load(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// scoreAll asks for every position of each text after a BOS.
func textRequests(t *testing.T, tok runner.Tokenizer, bos int32, texts []string) []runner.Request {
	t.Helper()
	var reqs []runner.Request
	for _, s := range texts {
		ids, err := tok.Tokenize(s)
		if err != nil {
			t.Fatal(err)
		}
		seq := append([]int32{bos}, ids...)
		br := runner.Branch{Tokens: seq}
		for p := 1; p < len(seq); p++ {
			br.Positions = append(br.Positions, p)
		}
		reqs = append(reqs, runner.Request{Branches: []runner.Branch{br}})
	}
	return reqs
}

var texts = []string{
	"The quick brown fox jumps over the lazy dog.",
	"Bits per byte: naïve café, 東京, Ελληνικά, emoji 🙂!",
	"a",
	strings.Repeat("long context makes attention matter; ", 12),
}

func TestBigramMatchesClosedForm(t *testing.T) {
	bp, _ := fixtures(t)
	m := load(t, bp, Options{Threads: 2})
	info := m.Info()
	if info.BOS != 256 || info.VocabSize != 257 || info.Arch != "llama" {
		t.Fatalf("metadata: %+v", info)
	}
	reqs := textRequests(t, m, info.BOS, texts)
	res, err := m.Score(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for i, r := range reqs {
		seq := r.Branches[0].Tokens
		for k, p := range r.Branches[0].Positions {
			want := bigram.LogProb(seq[p-1], seq[p])
			worst = math.Max(worst, math.Abs(res[i][0][k]-want))
		}
	}
	if worst > 1e-4 {
		t.Fatalf("largest difference from the closed form: %g nats", worst)
	}
	t.Logf("largest difference from the closed form: %.3g nats", worst)
}

func TestTokenizeIsBytes(t *testing.T) {
	bp, _ := fixtures(t)
	m := load(t, bp, Options{Threads: 1})
	for _, s := range texts {
		ids, err := m.Tokenize(s)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != len(s) {
			t.Fatalf("%q: %d tokens for %d bytes", s, len(ids), len(s))
		}
		for i := range ids {
			if ids[i] != int32(s[i]) {
				t.Fatalf("%q: token %d is %d, byte is %d", s, i, ids[i], s[i])
			}
		}
		back, err := m.Detokenize(ids)
		if err != nil || back != s {
			t.Fatalf("detokenize: %q, %v", back, err)
		}
	}
	// Special-looking text stays text.
	ids, _ := m.Tokenize("<|endoftext|>")
	for _, id := range ids {
		if id == 256 {
			t.Fatal("special token parsed out of plain text")
		}
	}
}

// probeLike builds requests with a shared prompt and several choices, the
// shape the probe scorer sends.
func probeLike(rng *rand.Rand, n int) []runner.Request {
	var reqs []runner.Request
	tok := func(k int) []int32 {
		s := make([]int32, k)
		for i := range s {
			s[i] = int32(32 + rng.IntN(90))
		}
		return s
	}
	for range n {
		r := runner.Request{Prefix: append([]int32{256}, tok(10+rng.IntN(40))...)}
		for range 2 + rng.IntN(3) {
			br := runner.Branch{Tokens: tok(1 + rng.IntN(6))}
			for p := len(r.Prefix); p < len(r.Prefix)+len(br.Tokens); p++ {
				br.Positions = append(br.Positions, p)
			}
			r.Branches = append(r.Branches, br)
		}
		reqs = append(reqs, r)
	}
	return reqs
}

func maxDiff(t *testing.T, a, b []runner.Result) float64 {
	t.Helper()
	worst := 0.0
	for i := range a {
		for br := range a[i] {
			if len(a[i][br]) != len(b[i][br]) {
				t.Fatalf("request %d branch %d: %d vs %d values", i, br, len(a[i][br]), len(b[i][br]))
			}
			for k := range a[i][br] {
				worst = math.Max(worst, math.Abs(a[i][br][k]-b[i][br][k]))
			}
		}
	}
	return worst
}

func TestTransformerMatchesReference(t *testing.T) {
	_, lp := fixtures(t)
	m := load(t, lp, Options{Threads: 2})
	reqs := append(textRequests(t, m, 256, texts), probeLike(rand.New(rand.NewPCG(1, 1)), 10)...)
	got, err := m.Score(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	want, err := tiny.Score(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	if d := maxDiff(t, got, want); d > 1e-4 {
		t.Fatalf("llama.cpp and the Go forward pass differ by %g nats", d)
	} else {
		t.Logf("llama.cpp vs Go float64 forward pass: %.3g nats at most", d)
	}
}

func TestInvariance(t *testing.T) {
	_, lp := fixtures(t)
	reqs := append(textRequests(t, testmodel.RandomBigram(1), 256, texts), probeLike(rand.New(rand.NewPCG(2, 2)), 40)...)
	base := load(t, lp, Options{Threads: 1, Batch: 512, Parallel: 32})
	ref, err := base.Score(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	again, err := base.Score(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	if d := maxDiff(t, ref, again); d != 0 {
		t.Fatalf("a repeated run differs by %g", d)
	}
	unshared, err := base.Score(context.Background(), runner.Unshare(reqs))
	if err != nil {
		t.Fatal(err)
	}
	if d := maxDiff(t, ref, runner.Reshare(reqs, unshared)); d > 1e-4 {
		t.Fatalf("prefix sharing changes log-probabilities by %g", d)
	}
	for _, o := range []Options{
		{Threads: 2, Batch: 512, Parallel: 32},
		{Threads: 1, Batch: 7, Parallel: 4},
		{Threads: 2, Batch: 64, Parallel: 8, Context: 512},
		{Threads: 2, Batch: 2048, Parallel: 64, Context: 8192},
		{Threads: 2, Batch: 512, Parallel: 8, Context: 512, SeparateCaches: true},
	} {
		m := load(t, lp, o)
		got, err := m.Score(context.Background(), reqs)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		if d := maxDiff(t, ref, got); d > 1e-4 {
			t.Fatalf("%+v changes log-probabilities by %g", o, d)
		}
		// One request at a time: no packing at all.
		for i := range reqs[:6] {
			one, err := m.Score(context.Background(), reqs[i:i+1])
			if err != nil {
				t.Fatal(err)
			}
			if d := maxDiff(t, ref[i:i+1], one); d > 1e-4 {
				t.Fatalf("%+v: request %d alone differs by %g", o, i, d)
			}
		}
	}
}

func TestBadInput(t *testing.T) {
	bp, lp := fixtures(t)
	dir := t.TempDir()
	notGGUF := filepath.Join(dir, "weights.bin")
	os.WriteFile(notGGUF, []byte("definitely not a model file"), 0o644)
	whole, _ := os.ReadFile(lp)
	truncated := filepath.Join(dir, "truncated.gguf")
	os.WriteFile(truncated, whole[:len(whole)/2], 0o644)
	headerOnly := filepath.Join(dir, "header.gguf")
	os.WriteFile(headerOnly, whole[:100], 0o644)
	foreign := filepath.Join(dir, "foreign.gguf")
	// Rename the architecture in place: same length, so the file stays valid GGUF.
	os.WriteFile(foreign, []byte(strings.Replace(string(whole), "llama", "zzzzz", -1)), 0o644)

	for _, c := range []struct{ path, want string }{
		{filepath.Join(dir, "missing.gguf"), "file not found"},
		{notGGUF, "not a GGUF file"},
		{truncated, "exceeds file size"},
		{headerOnly, "truncated"},
		{foreign, "zzzzz"},
	} {
		_, err := Load(c.path, Options{Threads: 1})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) {
			t.Errorf("Load(%s): %v; want an error naming the file and %q", filepath.Base(c.path), err, c.want)
		}
	}

	m := load(t, bp, Options{Threads: 1, Context: 256, Parallel: 2, Batch: 64})
	long := make([]int32, 300)
	for _, c := range []struct {
		name string
		req  runner.Request
		want string
	}{
		{"longer than context", runner.Request{Branches: []runner.Branch{{Tokens: long, Positions: []int{1}}}}, "longer than the context"},
		{"token out of range", runner.Request{Branches: []runner.Branch{{Tokens: []int32{1, 257}, Positions: []int{1}}}}, "out of range"},
		{"too many branches", runner.Request{Prefix: []int32{1}, Branches: make([]runner.Branch, 3)}, "parallel sequences"},
	} {
		if _, err := m.Score(context.Background(), []runner.Request{c.req}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	// The model still works after refused requests.
	if _, err := m.Score(context.Background(), textRequests(t, m, 256, texts[:1])); err != nil {
		t.Fatal(err)
	}
}

func TestCancel(t *testing.T) {
	_, lp := fixtures(t)
	m := load(t, lp, Options{Threads: 1, Batch: 16})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Score(ctx, probeLike(rand.New(rand.NewPCG(5, 5)), 50)); err != context.Canceled {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// A context smaller than the batch: llama.cpp lowers its batch, and the
// planner must follow rather than trip llama.cpp's assertion.
func TestContextSmallerThanBatch(t *testing.T) {
	bp, _ := fixtures(t)
	m := load(t, bp, Options{Threads: 1, Context: 64, Batch: 512, Parallel: 4})
	reqs := textRequests(t, m, 256, []string{texts[0], texts[0][:20], texts[2]})
	got, err := m.Score(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		seq := r.Branches[0].Tokens
		for k, p := range r.Branches[0].Positions {
			if d := math.Abs(got[i][0][k] - bigram.LogProb(seq[p-1], seq[p])); d > 1e-4 {
				t.Fatalf("request %d position %d off by %g", i, p, d)
			}
		}
	}
}

func TestForEachParallelCallsEachIndexOnce(t *testing.T) {
	for _, tc := range []struct{ n, workers int }{{0, 2}, {1, 2}, {5, 1}, {5, 2}, {7, 3}, {3, 8}} {
		calls := make([]int32, tc.n)
		forEachParallel(tc.n, tc.workers, func(k int) { atomic.AddInt32(&calls[k], 1) })
		for k, c := range calls {
			if c != 1 {
				t.Errorf("n=%d workers=%d: index %d called %d times", tc.n, tc.workers, k, c)
			}
		}
	}
}
