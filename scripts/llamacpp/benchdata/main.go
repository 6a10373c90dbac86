// Command benchdata writes what run.sh measures on: the SmolLM2-135M-shaped
// random model the Go benchmarks use (its path on stdout) and the Fresh Text
// benchmark's mixed documents, every -every'th of them, as JSONL for
// `udgam-ci score fresh` and as one text (documents joined by a blank line)
// for llama-perplexity, which reads a single file.
//
//	go run ./scripts/llamacpp/benchdata -out DIR [-every 30]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/udgamlabs/udgam-ci/evals/fresh"
	"github.com/udgamlabs/udgam-ci/runner/testmodel"
)

func main() {
	out := flag.String("out", "", "folder for docs.jsonl and docs.txt")
	every := flag.Int("every", 30, "keep every Nth of the benchmark's 300 mixed documents")
	flag.Parse()
	if *out == "" || *every < 1 {
		fmt.Fprintln(os.Stderr, "usage: benchdata -out DIR [-every N]")
		os.Exit(2)
	}
	if err := run(*out, *every); err != nil {
		fmt.Fprintln(os.Stderr, "benchdata:", err)
		os.Exit(1)
	}
}

func run(dir string, every int) error {
	model, err := testmodel.SmolGGUF(os.Getenv)
	if err != nil {
		return fmt.Errorf("write the benchmark model: %w", err)
	}
	if err := writeDocs(dir, every); err != nil {
		return err
	}
	fmt.Println(model)
	return nil
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
	if err := writeJSONL(filepath.Join(dir, "docs.jsonl"), docs); err != nil {
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

func writeJSONL(path string, docs []fresh.Document) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, d := range docs {
		if err := enc.Encode(d); err != nil {
			f.Close()
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}
