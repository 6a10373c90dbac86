//go:build cgo

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/evals/fresh"
	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/udgamlabs/udgam-ci/runner/llama"
	"github.com/udgamlabs/udgam-ci/runner/textprep"
)

// tinyModel writes a small random Llama with the byte tokenizer.
func tinyModel(t *testing.T) string {
	t.Helper()
	m, err := testmodel.RandomLlama(1, testmodel.DefaultShape())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := testmodel.WriteLlamaGGUF(path, m); err != nil {
		t.Fatal(err)
	}
	return path
}

// bos is the byte tokenizer's ids of text after BOS.
func bos(text string) []int32 {
	return append([]int32{testmodel.BOS}, tokens(text)...)
}

func tokens(text string) []int32 {
	ids := make([]int32, len(text))
	for i := range len(text) {
		ids[i] = int32(text[i])
	}
	return ids
}

// window is a request for seq[begin:end] scoring positions from..end-1.
func window(seq []int32, begin, from, end int) runner.Request {
	var pos []int
	for p := from; p < end; p++ {
		pos = append(pos, p-begin)
	}
	return runner.Request{Branches: []runner.Branch{{Tokens: seq[begin:end], Positions: pos}}}
}

func writeDocs(t *testing.T, docs []fresh.Document) string {
	t.Helper()
	var b bytes.Buffer
	for _, d := range docs {
		line, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	path := filepath.Join(t.TempDir(), "docs.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The recorded requests are score fresh's windows, laid out by hand here:
// 21 tokens (BOS and 20 bytes) through windows of 8 every 4, then a
// 4-token document in one window; and the count is theirs.
func TestCountFresh(t *testing.T) {
	t.Parallel()
	long, short := "the quick brown fox!", "abc"
	docs := writeDocs(t, []fresh.Document{{ID: "a", Text: long}, {ID: "b", Text: short}})
	o := options{Model: tinyModel(t), Fresh: docs, Window: 8, Stride: 4, AddBOS: "auto"}
	c, err := count(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	a, b := bos(long), bos(short)
	want := []runner.Request{
		window(a, 0, 1, 8), window(a, 4, 8, 12), window(a, 8, 12, 16), window(a, 12, 16, 20), window(a, 16, 20, 21),
		window(b, 0, 1, 4),
	}
	if !reflect.DeepEqual(c.reqs, want) {
		t.Errorf("requests\n%v\nwant\n%v", c.reqs, want)
	}
	// llama.cpp opens a context of 8 cells as 256.
	if c.lim.Cells != 256 {
		t.Errorf("cells = %d, want 256", c.lim.Cells)
	}
	checkLine(t, o, c, want, 256)
}

// Without BOS the first token is context only: one fewer position.
func TestCountFreshWithoutBOS(t *testing.T) {
	t.Parallel()
	docs := writeDocs(t, []fresh.Document{{ID: "a", Text: "hello"}})
	c, err := count(context.Background(), options{Model: tinyModel(t), Fresh: docs, Window: 8, Stride: 4, AddBOS: "no"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []runner.Request{window(tokens("hello"), 0, 1, 5)}; !reflect.DeepEqual(c.reqs, want) {
		t.Errorf("requests %v, want %v", c.reqs, want)
	}
}

// An item is one request: BOS and the prompt shared, each " "+choice a
// branch of its own, every choice token read.
func TestCountProbes(t *testing.T) {
	t.Parallel()
	set, err := probes.Core()
	if err != nil {
		t.Fatal(err)
	}
	items := set.Items[:2]
	path := filepath.Join(t.TempDir(), "probes.jsonl")
	if err := probes.WriteFile(path, items); err != nil {
		t.Fatal(err)
	}
	o := options{Model: tinyModel(t), Probes: path, AddBOS: "auto"}
	c, err := count(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var want []runner.Request
	for _, it := range items {
		r := runner.Request{Prefix: bos(it.Prompt)}
		for _, ch := range it.Choices {
			toks := tokens(" " + ch)
			var pos []int
			for i := range toks {
				pos = append(pos, len(r.Prefix)+i)
			}
			r.Branches = append(r.Branches, runner.Branch{Tokens: toks, Positions: pos})
		}
		want = append(want, r)
	}
	if !reflect.DeepEqual(c.reqs, want) {
		t.Errorf("requests\n%v\nwant\n%v", c.reqs, want)
	}
	if c.lim.Cells != probes.Cells {
		t.Errorf("cells = %d, want probes.Cells = %d", c.lim.Cells, probes.Cells)
	}
	checkLine(t, o, c, want, probes.Cells)
}

// checkLine: run prints the count of want, sent in one call and planned as
// the engine the score commands open plans it, on the model's shape.
func checkLine(t *testing.T, o options, c counted, want []runner.Request, cells int) {
	t.Helper()
	if len(c.ends) != 1 || !c.lim.ShareStarts {
		t.Fatalf("%d engine calls, ShareStarts %v: want one call, planned with shared starts as the engine does", len(c.ends), c.lim.ShareStarts)
	}
	var out bytes.Buffer
	if err := run(&out, o); err != nil {
		t.Fatal(err)
	}
	s := testmodel.DefaultShape().Dims()
	line := fmt.Sprintf("flops=%.0f requests=%d cells=%d kv_bytes=%d\n", runner.FLOPs(s, want, c.lim), len(want), cells, cells*s.Layers*2*s.KVHeads*s.HeadDim*4)
	if out.String() != line {
		t.Errorf("run printed %q, want %q", out.String(), line)
	}
}

// spy scores for real and keeps the requests, so the test below compares
// what the engine gets in a real scoring with what the recorder counts.
type spy struct {
	*llama.Model
	reqs []runner.Request
}

func (s *spy) Score(ctx context.Context, reqs []runner.Request) ([]runner.Result, error) {
	s.reqs = append(s.reqs, reqs...)
	return s.Model.Score(ctx, reqs)
}

// ScoreEach keeps the requests too, then scores as the engine does.
func (s *spy) ScoreEach(ctx context.Context, reqs []runner.Request, done func(int, runner.Result) error) error {
	s.reqs = append(s.reqs, reqs...)
	return s.Model.ScoreEach(ctx, reqs, done)
}

// Answering with zeros changes nothing the scorers ask: a real scoring
// issues the recorded requests, in the same order.
func TestRecordedAreScored(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("abcdefghij", 7)
	docs := writeDocs(t, []fresh.Document{{ID: "a", Text: text}, {ID: "b", Text: "xy"}})
	o := options{Model: tinyModel(t), Fresh: docs, Window: 32, Stride: 16, AddBOS: "auto"}
	c, err := count(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	m, err := llama.Load(o.Model, llama.Options{Threads: 1, Context: o.Window})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s := &spy{Model: m}
	tm, err := textprep.WrapModel(s)
	if err != nil {
		t.Fatal(err)
	}
	data, err := fresh.LoadFile(docs)
	if err != nil {
		t.Fatal(err)
	}
	so := fresh.ScoreOptions{Window: o.Window, Stride: o.Stride, AddBOS: true, BOS: testmodel.BOS}
	scored := 0
	if err := fresh.Score(context.Background(), tm, data.Docs, so, func(runfile.Doc) error { scored++; return nil }); err != nil {
		t.Fatal(err)
	}
	if scored != 2 {
		t.Fatalf("%d documents scored, want 2", scored)
	}
	if len(c.reqs) < 4 || !reflect.DeepEqual(c.reqs, s.reqs) {
		t.Errorf("recorded %d requests, a real scoring issued %d, or they differ", len(c.reqs), len(s.reqs))
	}
}
