//go:build cgo

// Command benchdata writes what run.sh measures on: the SmolLM2-135M-shaped
// random model the Go benchmarks use (its path on stdout) and the Fresh Text
// benchmark's mixed documents, every -every'th of them, as JSONL for
// `udgam-ci score fresh` and as one text (documents joined by a blank line)
// for llama-perplexity, which reads a single file. With -probes it also
// writes the core items the Probe Suite benchmark scores (bench.CoreSample:
// UDGAM_BENCH_ITEMS of them) as JSONL for `udgam-ci score probes` and as
// token ids for mc.cpp (probes.tok), tokenized by the model's own tokenizer
// the way udgam-ci scores them (probes.BuildRequest), so that both programs
// score the same ids; and the model's float32 twin (testmodel.SmolF32GGUF,
// its path on a second line), on which run.sh holds the two programs'
// values to 1e-4, with the items tokenized by its tokenizer (probes-f32.tok).
// -tokenize names more GGUF files (comma-separated: the real quantized
// files run.sh also times) whose tokenizers each write probes-NAME.tok,
// NAME the file's name without .gguf.
//
//	go run ./scripts/llamacpp/benchdata -out DIR [-every 30] [-probes [-tokenize A.gguf,B.gguf]]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/evals/fresh"
	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/evals/probes/bench"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/udgamlabs/udgam-ci/runner/llama"
)

func main() {
	out := flag.String("out", "", "folder for docs.jsonl and docs.txt")
	every := flag.Int("every", 30, "keep every Nth of the benchmark's 300 mixed documents")
	withProbes := flag.Bool("probes", false, "also write probes.jsonl and probes.tok: the Probe Suite benchmark's core items (UDGAM_BENCH_ITEMS)")
	tokenize := flag.String("tokenize", "", "with -probes, comma-separated GGUF files whose tokenizers each write probes-NAME.tok")
	flag.Parse()
	if *out == "" || *every < 1 || flag.NArg() > 0 || (*tokenize != "" && !*withProbes) {
		fmt.Fprintln(os.Stderr, "usage: benchdata -out DIR [-every N] [-probes [-tokenize A.gguf,B.gguf]]")
		os.Exit(2)
	}
	var others []string
	if *tokenize != "" {
		others = strings.Split(*tokenize, ",")
	}
	if err := run(*out, *every, *withProbes, others); err != nil {
		fmt.Fprintln(os.Stderr, "benchdata:", err)
		os.Exit(1)
	}
}

func run(dir string, every int, withProbes bool, others []string) error {
	model, err := testmodel.SmolGGUF(os.Getenv)
	if err != nil {
		return fmt.Errorf("write the benchmark model: %w", err)
	}
	if err := writeDocs(dir, every); err != nil {
		return err
	}
	if !withProbes {
		fmt.Println(model)
		return nil
	}
	items, err := bench.CoreSample(os.Getenv)
	if err != nil {
		return err
	}
	if err := probes.WriteFile(filepath.Join(dir, "probes.jsonl"), items); err != nil {
		return err
	}
	twin, err := testmodel.SmolF32GGUF(os.Getenv)
	if err != nil {
		return fmt.Errorf("write the benchmark model's float32 twin: %w", err)
	}
	toks := []struct{ model, out string }{{model, "probes.tok"}, {twin, "probes-f32.tok"}}
	for _, o := range others {
		toks = append(toks, struct{ model, out string }{o, "probes-" + strings.TrimSuffix(filepath.Base(o), ".gguf") + ".tok"})
	}
	for _, f := range toks {
		if err := tokenizeWith(f.model, filepath.Join(dir, f.out), items); err != nil {
			return err
		}
	}
	fmt.Println(model)
	fmt.Println(twin)
	return nil
}

// tokenizeWith writes items' tokens as model's tokenizer gives them, BOS
// as `score probes --add-bos auto` puts it.
func tokenizeWith(model, path string, items []probes.Item) error {
	// Only the tokenizer is used: the smallest context will do.
	m, err := llama.Load(model, llama.Options{Threads: 1, Context: 256, Parallel: 1, CPUOnly: true})
	if err != nil {
		return err
	}
	defer m.Close()
	addBOS, err := evals.ResolveBOS(evals.BOSAuto, m.Info())
	if err != nil {
		return err
	}
	return writeTokens(path, items, m, addBOS, m.Info().BOS)
}

// writeTokens writes the items' tokens for mc.cpp: a line per item of
// tab-separated fields, the id, the right choice's index, the prompt's
// token ids (BOS first when addBOS) and each choice's, ids separated by
// spaces.
func writeTokens(path string, items []probes.Item, tok runner.Tokenizer, addBOS bool, bos int32) error {
	var b strings.Builder
	for i := range items {
		it := &items[i]
		if strings.ContainsAny(it.ID, "\t\n") {
			return fmt.Errorf("item %q: a tab or newline in the id would break probes.tok's lines", it.ID)
		}
		r, err := probes.BuildRequest(tok, it, addBOS, bos)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s\t%d\t%s", it.ID, it.AnswerIndex(), ids(r.Prefix))
		for _, br := range r.Branches {
			fmt.Fprintf(&b, "\t%s", ids(br.Tokens))
		}
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func ids(toks []int32) string {
	s := make([]string, len(toks))
	for i, t := range toks {
		s[i] = strconv.Itoa(int(t))
	}
	return strings.Join(s, " ")
}

// writeDocs writes docs.jsonl and docs.txt into dir: the same documents as
// BenchmarkFreshLlama's mixed set, every every'th of them.
func writeDocs(dir string, every int) error {
	var docs []fresh.Document
	for i, d := range fresh.MixedBenchDocs(300) {
		if i%every == 0 {
			docs = append(docs, d)
		}
	}
	if err := fresh.WriteJSONL(filepath.Join(dir, "docs.jsonl"), docs); err != nil {
		return err
	}
	texts := make([]string, len(docs))
	for i, d := range docs {
		texts[i] = d.Text
	}
	txt := filepath.Join(dir, "docs.txt")
	if err := os.WriteFile(txt, []byte(strings.Join(texts, "\n\n")), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", txt, err)
	}
	return nil
}
