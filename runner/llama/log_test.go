//go:build cgo

package llama_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/udgamlabs/udgam-ci/runner/llama"
	"github.com/udgamlabs/udgam-ci/runner/llama/llamatest"
)

// llama.cpp's log callback is one per process; each model's log must stay
// its own. Models load, score and close side by side: one verbose into a
// file of its own, one quiet (its file must stay empty), and two files
// llama.cpp refuses for different reasons, whose errors must each give
// their own reason and not the other's.
func TestLogsStayWithTheirModel(t *testing.T) {
	t.Parallel()
	bp, lp := fixtures(t)
	dir := t.TempDir()
	whole, err := os.ReadFile(lp)
	if err != nil {
		t.Fatal(err)
	}
	// Same length as "llama", so each file stays valid GGUF that llama.cpp
	// refuses by its architecture's name.
	bad := map[string]string{}
	for i, arch := range []string{"zzzzz", "yyyyy"} {
		p := filepath.Join(dir, []string{"first.gguf", "second.gguf"}[i])
		if err := os.WriteFile(p, bytes.ReplaceAll(whole, []byte("llama"), []byte(arch)), 0o644); err != nil {
			t.Fatal(err)
		}
		bad[arch] = p
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
