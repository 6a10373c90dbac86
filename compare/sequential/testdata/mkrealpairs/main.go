// Command mkrealpairs writes ../realpairs/*.csv: real pairs of checkpoints
// of one model, each a shipped quantized GGUF (scripts/realmodels/install.sh:
// SmolLM2-135M-Instruct Q4_1, Gemma 3 270M Q4_K_M) and its requantization
// to Q8_0 by llama.cpp (llama.Requantize: every quantized tensor turned to
// float32 and quantized again), a small, realistic change. Both files of a
// pair are scored by the udgam-ci binary (default window and stride) on
// one Fresh Text set, and every window's scored span is a row: its
// document, its index, its tokens, its bytes (runfile.SpanBytes) and its
// bits under the head (the requantization) and the base (the shipped
// file). The set is every document of the real-file fixture
// (../realdocs.csv: prefixes of this machine's files, in its order) that
// this machine has, cut to a quarter of its recorded length (at least 100
// bytes, at most 8 KB, at most the file) and to whole UTF-8 characters,
// less those holding a NUL byte or text a model's tokenizer refuses (one:
// asoundrc.txt holds SmolLM2's control token "<filename>"): 616 documents,
// 10 B to 8 KB, 272 KB, the top 1% holding 17% of the bytes and the top
// tenth 59%. Nothing in it is random: the set, the requantization and the
// scores are the same on every run. Run it from compare/sequential with
// the engine's flags, after make build and the install script:
//
//	eval "$(make -s -C ../.. env)"
//	go run ./testdata/mkrealpairs -models "$(bash ../../scripts/realmodels/install.sh | tail -1)"
//
// The runs stay in -work; the fixtures are kept as recorded (gzipped
// CSV), so the simulations (realpairs_test.go) need no model. The recorded
// ones were made on 2026-12-07 at 7a15cd5 with engine llama.cpp ec98e2002
// (ollama v0.17.4) on a shared 2-core AMD EPYC (AVX-512), every process at
// the lowest priority (chrt -i 0 nice -n 19), two shards a run: the four
// runs took about an hour of wall time. Files, by sha256:
//
//	b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53  SmolLM2-135M-Instruct.Q4_1.gguf
//	7b46609d11703c058397e5cfe4cc6e4b2508cb1eb4c80ddc472a5d421fbdb508  its Q8_0 requantization
//	a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818  gemma-3-270m-q4_k_m.gguf
//	d3d21138dcca83884e329b4cd6939b905c15e06022a930ce13d6db4d9e67290a  its Q8_0 requantization
//
// Both pairs hold all 616 documents (629 and 627 spans).
package main

import (
	"bufio"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner/llama"
	"github.com/udgamlabs/udgam-ci/runner/textprep"
)

// pair is a shipped file, the type its requantization takes, and how
// many of the set's documents (the first) it is scored on, 0 for all.
type pair struct {
	name, file, typ string
	limit           int
}

var pairs = []pair{
	{"smollm2-135m-q8_0-vs-q4_1", "SmolLM2-135M-Instruct.Q4_1.gguf", "q8_0", 0},
	{"gemma3-270m-q8_0-vs-q4_k_m", "gemma-3-270m-q4_k_m.gguf", "q8_0", 0},
}

func main() {
	models := flag.String("models", "", "directory of the real models (scripts/realmodels/install.sh's last line)")
	bin := flag.String("bin", "../../bin/udgam-ci", "the udgam-ci binary")
	work := flag.String("work", filepath.Join(os.TempDir(), "udgam-realpairs"), "directory for the documents, GGUFs and runs")
	shards := flag.Int("shards", 2, "processes per model's run, one thread each, all at once")
	only := flag.String("only", "", "make only the pair of this name")
	partial := flag.Bool("partial", false, "score nothing: pair the documents that both models' run files and shard files, finished or not, hold so far")
	flag.Parse()
	if *models == "" {
		log.Fatal("mkrealpairs: -models is required")
	}
	if err := os.MkdirAll(*work, 0o755); err != nil {
		log.Fatal(err)
	}
	docs := filepath.Join(*work, "docs.jsonl")
	checks, err := textChecks(*models)
	if err != nil {
		log.Fatal(err)
	}
	if err := writeDocs("testdata/realdocs.csv", docs, checks); err != nil {
		log.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(pairs)*(*shards+1))
	// each model's run goes in shards, one process each, merged after
	run := func(p pair, model, out string) {
		defer wg.Done()
		if _, err := os.Stat(out); err == nil {
			return // scored before: the runs are kept, as they take minutes
		}
		var sw sync.WaitGroup
		parts := make([]string, *shards)
		for i := range parts {
			parts[i] = fmt.Sprintf("%s.%d-of-%d", out, i+1, *shards)
			sw.Add(1)
			go func() {
				defer sw.Done()
				if _, err := os.Stat(parts[i]); err == nil {
					return
				}
				cmd := exec.Command(*bin, "score", "fresh", "--model", model, "--data", docs, "--out", parts[i]+".part",
					"--threads", "1", "--gpu", "cpu", "--shard", fmt.Sprintf("%d/%d", i+1, *shards), "--limit", strconv.Itoa(p.limit))
				cmd.Stderr = os.Stderr
				if err := cmd.Run(); err != nil {
					errs <- fmt.Errorf("score %s: %w", model, err)
					return
				}
				if err := os.Rename(parts[i]+".part", parts[i]); err != nil {
					errs <- err
				}
			}()
		}
		sw.Wait()
		cmd := exec.Command(*bin, append([]string{"merge", out}, parts...)...)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			errs <- fmt.Errorf("merge %s: %w", out, err)
		}
	}
	todo := slices.DeleteFunc(slices.Clone(pairs), func(p pair) bool { return *only != "" && p.name != *only })
	for _, p := range todo {
		base := filepath.Join(*models, p.file)
		head := filepath.Join(*work, p.name+".gguf")
		if _, err := os.Stat(head); err != nil {
			if err := llama.Requantize(base, head, p.typ, 0); err != nil {
				log.Fatal(err)
			}
		}
		if *partial {
			continue
		}
		wg.Add(2)
		go run(p, base, filepath.Join(*work, p.name+"-base.jsonl"))
		go run(p, head, filepath.Join(*work, p.name+"-head.jsonl"))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		log.Fatal(err)
	}
	for _, p := range todo {
		out := filepath.Join("testdata", "realpairs", p.name+".csv.gz")
		if err := writePair(filepath.Join(*work, p.name+"-head.jsonl"), filepath.Join(*work, p.name+"-base.jsonl"), out, *partial); err != nil {
			log.Fatal(err)
		}
	}
}

// textChecks are the shipped files' checks of a document's text, as the
// score command makes them (textprep.CheckText). Every pair's set is the
// same, so a document any of them refuses (a control token's literal) is
// left out: scored, it would fail its whole shard. A requantization keeps
// its file's tokenizer, so the shipped file's check is the pair's.
func textChecks(models string) ([]func(string) error, error) {
	var checks []func(string) error
	for _, p := range pairs {
		path := filepath.Join(models, p.file)
		m, err := llama.Load(path, llama.Options{Threads: 1, Context: 512, CPUOnly: true})
		if err != nil {
			return nil, err
		}
		tm, err := textprep.WrapModel(m)
		if err != nil {
			return nil, fmt.Errorf("model %s: %w", path, err)
		}
		checks = append(checks, tm.CheckText) // kept open to the end of the run
	}
	return checks, nil
}

// writeDocs writes the Fresh Text set from the real-file fixture's rows,
// leaving out a document a check refuses.
func writeDocs(fixture, out string, checks []func(string) error) error {
	f, err := os.Open(fixture)
	if err != nil {
		return err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return fmt.Errorf("read %s: %w", fixture, err)
	}
	w, err := os.Create(out)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	n := 0
	for i, r := range rows[1:] {
		want, err := strconv.Atoi(r[1])
		if err != nil {
			return fmt.Errorf("%s line %d: %w", fixture, i+2, err)
		}
		b, err := os.ReadFile(r[0])
		if err != nil {
			continue // a file this machine lacks
		}
		b = b[:min(len(b), want, max(100, want/4), 8192)]
		for len(b) > 0 && !utf8.Valid(b) {
			b = b[:len(b)-1] // a character cut at the end
		}
		if len(b) == 0 || !utf8.Valid(b) || containsNUL(b) {
			continue
		}
		if err := refused(string(b), checks); err != nil {
			log.Printf("mkrealpairs: left out %s: %v", r[0], err)
			continue
		}
		if err := enc.Encode(map[string]string{"id": r[0], "text": string(b), "source": "file"}); err != nil {
			return err
		}
		n++
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	log.Printf("mkrealpairs: %d documents in %s", n, out)
	return w.Close()
}

// refused is the first check's refusal of text, nil if all accept it.
func refused(text string, checks []func(string) error) error {
	for _, c := range checks {
		if err := c(text); err != nil {
			return err
		}
	}
	return nil
}

func containsNUL(b []byte) bool {
	for _, c := range b {
		if c == 0 {
			return true
		}
	}
	return false
}

// writePair writes one row per span of the documents both runs hold,
// which must have the same spans' tokens (one tokenizer). With partial,
// each side is every run file of it there is (shards, finished or not).
func writePair(headPath, basePath, out string, partial bool) error {
	head, err := readSide(headPath, partial)
	if err != nil {
		return err
	}
	base, err := readSide(basePath, partial)
	if err != nil {
		return err
	}
	byID := map[string]*runfile.Doc{}
	for i := range base.Docs {
		byID[base.Docs[i].ID] = &base.Docs[i]
	}
	// every document both hold (an unfinished run holds a prefix)
	docs := slices.DeleteFunc(slices.Clone(head.Docs), func(d runfile.Doc) bool { return byID[d.ID] == nil })
	log.Printf("mkrealpairs: %s: %d documents (the head holds %d, the base %d)", out, len(docs), len(head.Docs), len(base.Docs))
	slices.SortFunc(docs, func(a, b runfile.Doc) int { return strings.Compare(a.ID, b.ID) })
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(f) // the paths repeat: about a fifth of the size
	w := csv.NewWriter(zw)
	_ = w.Write([]string{"doc", "span", "tokens", "bytes", "head_bits", "base_bits"})
	for i := range docs {
		h, b := &docs[i], byID[docs[i].ID]
		if h.Bytes != b.Bytes || len(h.Spans) != len(b.Spans) {
			return fmt.Errorf("document %s: %d bytes in %d spans against %d in %d", h.ID, h.Bytes, len(h.Spans), b.Bytes, len(b.Spans))
		}
		bytes := runfile.SpanBytes(h.Bytes, h.Spans)
		for k := range h.Spans {
			if h.Spans[k].Tokens != b.Spans[k].Tokens {
				return fmt.Errorf("document %s span %d: %d tokens against %d", h.ID, k+1, h.Spans[k].Tokens, b.Spans[k].Tokens)
			}
			_ = w.Write([]string{h.ID, fmt.Sprint(k + 1), fmt.Sprint(h.Spans[k].Tokens), fmt.Sprint(bytes[k]),
				strconv.FormatFloat(h.Spans[k].Bits, 'f', 4, 64), strconv.FormatFloat(b.Spans[k].Bits, 'f', 4, 64)})
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// readSide reads one model's run, or with partial the documents of all its
// run files (path and path.*), each document once.
func readSide(path string, partial bool) (*runfile.Run, error) {
	if !partial {
		return runfile.ReadFile(path)
	}
	files, _ := filepath.Glob(path + "*")
	all := &runfile.Run{}
	seen := map[string]bool{}
	for _, f := range files {
		r, err := runfile.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, d := range r.Docs {
			if !seen[d.ID] {
				seen[d.ID] = true
				all.Docs = append(all.Docs, d)
			}
		}
	}
	return all, nil
}
