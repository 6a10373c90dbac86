//go:build cgo

package llama_test

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/udgamlabs/udgam-ci/runner/llama"
	"github.com/udgamlabs/udgam-ci/runner/llama/llamatest"
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

func TestBigramMatchesClosedForm(t *testing.T) {
	t.Parallel()
	bp, _ := fixtures(t)
	m := llamatest.Load(t, bp, llama.Options{Threads: 2})
	info := m.Info()
	if info.BOS != 256 || info.VocabSize != 257 || info.Arch != "llama" {
		t.Fatalf("metadata: %+v", info)
	}
	reqs := llamatest.TextRequests(t, m, info.BOS, llamatest.Texts)
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
	t.Parallel()
	bp, _ := fixtures(t)
	m := llamatest.Load(t, bp, llama.Options{Threads: 1})
	for _, s := range llamatest.Texts {
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

func TestTransformerMatchesReference(t *testing.T) {
	t.Parallel()
	_, lp := fixtures(t)
	m := llamatest.Load(t, lp, llama.Options{Threads: 2})
	reqs := append(llamatest.TextRequests(t, m, 256, llamatest.Texts), llamatest.ProbeLike(rand.New(rand.NewPCG(1, 1)), 10, 256)...)
	matchesReference(t, m, tiny, reqs)
}

// matchesReference scores reqs with m and with ref's float64 forward pass
// and fails if any log-probability differs by more than 1e-4 nats.
func matchesReference(t *testing.T, m *llama.Model, ref *testmodel.Llama, reqs []runner.Request) {
	t.Helper()
	got, err := m.Score(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Score(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	if d := llamatest.MaxDiff(t, got, want); d > 1e-4 {
		t.Fatalf("llama.cpp and the Go forward pass differ by %g nats", d)
	} else {
		t.Logf("llama.cpp vs Go float64 forward pass: %.3g nats at most", d)
	}
}

func TestInvariance(t *testing.T) {
	t.Parallel()
	_, lp := fixtures(t)
	reqs := append(llamatest.TextRequests(t, testmodel.RandomBigram(1), 256, llamatest.Texts), llamatest.ProbeLike(rand.New(rand.NewPCG(2, 2)), 40, 256)...)
	llamatest.Invariance(t, lp, reqs)
}

// renamedArch writes the GGUF at src to dst with its architecture renamed
// to arch, five letters as "llama" is, so the file stays valid GGUF that
// llama.cpp refuses by that name, and returns dst.
func renamedArch(t *testing.T, src, dst, arch string) string {
	t.Helper()
	whole, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, bytes.ReplaceAll(whole, []byte("llama"), []byte(arch)), 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	bp, lp := fixtures(t)
	dir := t.TempDir()
	notGGUF := filepath.Join(dir, "weights.bin")
	os.WriteFile(notGGUF, []byte("definitely not a model file"), 0o644)
	whole, _ := os.ReadFile(lp)
	truncated := filepath.Join(dir, "truncated.gguf")
	os.WriteFile(truncated, whole[:len(whole)/2], 0o644)
	headerOnly := filepath.Join(dir, "header.gguf")
	os.WriteFile(headerOnly, whole[:100], 0o644)
	foreign := renamedArch(t, lp, filepath.Join(dir, "foreign.gguf"), "zzzzz")

	for _, c := range []struct{ path, want string }{
		{filepath.Join(dir, "missing.gguf"), "file not found"},
		{notGGUF, "not a GGUF file"},
		{truncated, "exceeds file size"},
		{headerOnly, "truncated"},
		{foreign, "zzzzz"},
	} {
		_, err := llama.Load(c.path, llama.Options{Threads: 1})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) {
			t.Errorf("Load(%s): %v; want an error naming the file and %q", filepath.Base(c.path), err, c.want)
		}
	}

	m := llamatest.Load(t, bp, llama.Options{Threads: 1, Context: 256, Parallel: 2, Batch: 64})
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
	if _, err := m.Score(context.Background(), llamatest.TextRequests(t, m, 256, llamatest.Texts[:1])); err != nil {
		t.Fatal(err)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	_, lp := fixtures(t)
	m := llamatest.Load(t, lp, llama.Options{Threads: 1, Batch: 16})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Score(ctx, llamatest.ProbeLike(rand.New(rand.NewPCG(5, 5)), 50, 256)); err != context.Canceled {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// A context smaller than the batch: llama.cpp lowers its batch, and the
// planner must follow rather than trip llama.cpp's assertion.
func TestContextSmallerThanBatch(t *testing.T) {
	t.Parallel()
	bp, _ := fixtures(t)
	m := llamatest.Load(t, bp, llama.Options{Threads: 1, Context: 64, Batch: 512, Parallel: 4})
	reqs := llamatest.TextRequests(t, m, 256, []string{llamatest.Texts[0], llamatest.Texts[0][:20], llamatest.Texts[2]})
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

// Starts shared across requests are evaluated once only where a cell may
// belong to several sequences: one cache for all, and no recurrent state.
func TestSharesStartsOnlyInOneCache(t *testing.T) {
	t.Parallel()
	bp, _ := fixtures(t)
	for _, tt := range []struct {
		separate, each, want bool
	}{{false, false, true}, {true, false, false}, {false, true, false}} {
		m := llamatest.Load(t, bp, llama.Options{Threads: 1, Parallel: 4, Context: 256, SeparateCaches: tt.separate, EachStart: tt.each})
		if got := m.Limits().ShareStarts; got != tt.want {
			t.Errorf("SeparateCaches %v, EachStart %v: ShareStarts %v, want %v", tt.separate, tt.each, got, tt.want)
		}
		m.Close()
	}
}

// Options left 0 take the named defaults, and Parallel is held to
// MaxParallel: llama.cpp's own limit, which it would otherwise abort on.
func TestOptionsDefaults(t *testing.T) {
	t.Parallel()
	bp, _ := fixtures(t)
	m := llamatest.Load(t, bp, llama.Options{Threads: 1})
	want := runner.Limits{BatchTokens: llama.DefaultBatch, MaxSeqs: llama.DefaultParallel, Cells: llama.DefaultContext,
		PackCells: llama.DefaultPackCells, ShareStarts: true}
	if got := m.Limits(); got != want {
		t.Errorf("limits with the default options: %+v, want %+v", got, want)
	}
	m.Close()
	m = llamatest.Load(t, bp, llama.Options{Threads: 1, Context: 256, Parallel: llama.MaxParallel})
	if got := m.Limits().MaxSeqs; got != llama.MaxParallel {
		t.Errorf("Parallel %d: %d sequences", llama.MaxParallel, got)
	}
	m.Close()
	if _, err := llama.Load(bp, llama.Options{Threads: 1, Context: 256, Parallel: llama.MaxParallel + 1}); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("Parallel %d: %v, want a refusal", llama.MaxParallel+1, err)
	}
}

// llama.cpp's log callback is one per process; each model's log must stay
// its own. Models load, score and close side by side: one verbose into a
// file of its own, one quiet (its file must stay empty), and two files
// llama.cpp refuses for different reasons, whose errors must each give
// their own reason and not the other's.
func TestLogsStayWithTheirModel(t *testing.T) {
	t.Parallel()
	bp, lp := fixtures(t)
	dir := t.TempDir()
	bad := map[string]string{
		"zzzzz": renamedArch(t, lp, filepath.Join(dir, "first.gguf"), "zzzzz"),
		"yyyyy": renamedArch(t, lp, filepath.Join(dir, "second.gguf"), "yyyyy"),
	}
	verboseLog, quietLog := filepath.Join(dir, "verbose.log"), filepath.Join(dir, "quiet.log")
	open := func(p string) *os.File {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	verbose := llama.WithLogTo(llama.Options{Threads: 1, Context: 256, Parallel: 2, Verbose: true}, open(verboseLog))
	quiet := llama.WithLogTo(llama.Options{Threads: 1, Context: 256, Parallel: 2}, open(quietLog))

	reqs := llamatest.TextRequests(t, bigram, 256, llamatest.Texts[:2])
	var wg sync.WaitGroup
	for range 3 {
		for _, c := range []struct {
			path string
			opts llama.Options
		}{{bp, verbose}, {lp, quiet}} {
			wg.Go(func() {
				m, err := llama.Load(c.path, c.opts)
				if err != nil {
					t.Error(err)
					return
				}
				defer m.Close()
				if _, err := m.Score(context.Background(), reqs); err != nil {
					t.Error(err)
				}
			})
		}
		for arch, p := range bad {
			wg.Go(func() {
				_, err := llama.Load(p, llama.Options{Threads: 1})
				if err == nil {
					t.Errorf("Load(%s) loaded a model of architecture %s", p, arch)
					return
				}
				for other := range bad {
					if got := strings.Contains(err.Error(), "'"+other+"'"); got != (other == arch) {
						t.Errorf("Load(%s), architecture %s: %v; want llama.cpp's reason for this file alone", p, arch, err)
					}
				}
			})
		}
	}
	wg.Wait()

	got, err := os.ReadFile(verboseLog)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(got, []byte(bp)) {
		t.Errorf("the verbose model's log does not name its file %s:\n%s", bp, got)
	}
	for _, other := range []string{lp, bad["zzzzz"], bad["yyyyy"]} {
		if bytes.Contains(got, []byte(other)) {
			t.Errorf("the verbose model's log has lines of another model's load (%s)", other)
		}
	}
	if got, err := os.ReadFile(quietLog); err != nil || len(got) > 0 {
		t.Errorf("the quiet model logged %d bytes (%v):\n%.500s", len(got), err, got)
	}
}
