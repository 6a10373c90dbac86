// Command demomodels makes the two models `make demo` scores: byte-level
// bigram language models, written as GGUF files llama.cpp loads, fitted by
// counting on the same training text, the baseline on its first few
// kilobytes and the candidate on all of it. The candidate has seen far more
// text, so it predicts English better: a real difference, known in advance.
//
// The training text is prose written for udgam-ci (corpus.txt) followed by
// Probe Suite questions with their answers, generated with other seeds than
// the embedded core set; questions whose prompt is also in the core set are
// left out, so no scored item is in the training text. The smoke sample of
// documents is not used.
//
//	go run ./scripts/demomodels -out demo
package main

import (
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
)

//go:embed corpus.txt
var prose string

// The recipe: fixed, so the same files come out on every machine.
const (
	baselineBytes = 2048          // the baseline sees only this much of the text
	alpha         = 0.5           // add-alpha smoothing of the bigram counts
	modelName     = "demo-bigram" // as the demo names its runs
)

// trainingSeed generates the probe questions of the training text; the
// core set uses probes.DefaultSeed.
const trainingSeed = 11

func main() {
	out := flag.String("out", "demo", "folder to write baseline.gguf and candidate.gguf to")
	mid := flag.Int("mid", 0, "also write mid.gguf, fitted on the first N bytes (scripts/seqbench.sh: a smaller difference to the candidate)")
	flag.Parse()
	if err := run(*out, *mid, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demomodels:", err)
		os.Exit(1)
	}
}

func run(dir string, mid int, w io.Writer) error {
	text, st, err := trainingText()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	models := demoModels(text)
	if mid > 0 {
		models = append(models, demoModel{"mid.gguf", "the first " + thousands(min(mid, len(text))), text[:min(mid, len(text))]})
	}
	for _, m := range models {
		b, err := testmodel.FitBigram(m.text, alpha)
		if err != nil {
			return err
		}
		path := filepath.Join(dir, m.file)
		if err := testmodel.WriteBigramGGUF(path, b, testmodel.WithName(modelName)); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		fmt.Fprintf(w, "wrote %s: byte bigram fitted on %s bytes of the training text\n", path, m.what)
	}
	fmt.Fprintf(w, "training text: %s bytes of prose written for udgam-ci interleaved with %s bytes of %d probe questions and answers (seed %d; %d generated questions whose prompt is in the scored core set left out)\n",
		thousands(st.ProseBytes), thousands(st.QuestionBytes), st.Questions, trainingSeed, st.Skipped)
	return nil
}

// demoModel is one model to fit: its file and the text it learns from.
type demoModel struct {
	file, what string
	text       []byte
}

// demoModels are the baseline (the start of the text) and the candidate
// (all of it).
func demoModels(text []byte) []demoModel {
	return []demoModel{
		{"baseline.gguf", "the first " + thousands(baselineBytes), text[:baselineBytes]},
		{"candidate.gguf", "all " + thousands(len(text)), text},
	}
}

// trainingText interleaves the prose, paragraph by paragraph, with
// generated questions in the prompt form the Probe Suite scores, each
// followed by its answer, about one byte of questions per byte of prose, so
// any prefix of the text has both kinds.
// textStats says what the training text holds.
type textStats struct {
	ProseBytes, QuestionBytes int
	Questions                 int // questions used
	Skipped                   int // generated questions whose prompt is in the core set
}

func trainingText() ([]byte, textStats, error) {
	var st textStats
	core, err := probes.Core()
	if err != nil {
		return nil, st, fmt.Errorf("load the core set: %w", err)
	}
	scored := make(map[string]bool, len(core.Items))
	for _, it := range core.Items {
		scored[it.Prompt] = true
	}
	if trainingSeed == probes.DefaultSeed {
		return nil, st, errors.New("the training seed is the core set's seed")
	}
	items, err := probes.Generate(probes.Options{Types: probes.TypesCore, Per: 100, Seed: trainingSeed})
	if err != nil {
		return nil, st, fmt.Errorf("generate probe questions, seed %d: %w", trainingSeed, err)
	}
	var questions []string
	for _, it := range items {
		if scored[it.Prompt] {
			st.Skipped++
			continue
		}
		questions = append(questions, it.Prompt+" "+it.Answer+"\n\n")
	}
	// Items come grouped by type; shuffle so every stretch mixes types.
	rng := rand.New(rand.NewPCG(uint64(trainingSeed), 0))
	rng.Shuffle(len(questions), func(i, j int) { questions[i], questions[j] = questions[j], questions[i] })

	var sb strings.Builder
	for _, para := range strings.SplitAfter(prose, "\n\n") {
		sb.WriteString(para)
		st.ProseBytes += len(para)
		for st.QuestionBytes < st.ProseBytes && st.Questions < len(questions) {
			q := questions[st.Questions]
			sb.WriteString(q)
			st.QuestionBytes += len(q)
			st.Questions++
		}
	}
	return []byte(sb.String()), st, nil
}

// thousands writes n with comma separators.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
