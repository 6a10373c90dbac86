// Package servertest makes synthetic runs for the report server's tests,
// benchmarks, load generator and screenshot seed. The runs are valid run
// files whose scores land near a chosen value.
package servertest

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// Spec describes a synthetic run. Zero fields get sensible defaults.
type Spec struct {
	ID       string
	Test     string // runfile.TestFresh or runfile.TestProbes
	Model    string
	Revision string
	Repo     string
	Ref      string
	PR       int // 0 for none
	Records  int
	Score    float64 // target bpb (fresh) or accuracy in percent (probes)
	Started  time.Time
	Seed     uint64
	Engine   string // settings.engine, to make flagged runs
	Window   int
	// Unverified, when set, records a tokenizer the converter could not
	// verify (settings.text_prep).
	Unverified string
}

func (s *Spec) defaults() {
	if s.Test == "" {
		s.Test = runfile.TestProbes
	}
	if s.Model == "" {
		s.Model = "HuggingFaceTB/SmolLM2-135M"
	}
	if s.Repo == "" {
		s.Repo = "udgamlabs/smol-train"
	}
	if s.Ref == "" {
		s.Ref = "main"
	}
	if s.Revision == "" {
		s.Revision = fmt.Sprintf("%040x", s.Seed+1)
	}
	if s.Records == 0 {
		s.Records = 200
	}
	if s.Score == 0 {
		if s.Test == runfile.TestFresh {
			s.Score = 0.95
		} else {
			s.Score = 45
		}
	}
	if s.Started.IsZero() {
		s.Started = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(s.Seed) * time.Hour)
	}
	if s.ID == "" {
		s.ID = fmt.Sprintf("%s-%d", s.Test, s.Seed)
	}
	if s.Engine == "" {
		s.Engine = "llama.cpp ec98e2002"
	}
	if s.Window == 0 && s.Test == runfile.TestFresh {
		s.Window = 2048
	}
}

// Header returns the header a Spec describes.
func (s Spec) Header() runfile.Header {
	s.defaults()
	h := runfile.Header{
		Schema:  runfile.Schema,
		ID:      s.ID,
		Test:    s.Test,
		Model:   runfile.Model{Name: s.Model, Revision: s.Revision, Arch: "llama", Dtype: "f16"},
		Dataset: runfile.Dataset{Name: "udgam-" + s.Test, Revision: "2026-11", SHA256: "d5e1", Count: s.Records},
		Settings: runfile.Settings{AddBOS: true, BOSMode: "auto", BOSID: 1, Dtype: "f16",
			TokenizerSHA256: "70c3", Engine: s.Engine},
		Runtime:   runfile.Runtime{Threads: 2},
		Git:       runfile.Git{Repo: s.Repo, SHA: s.Revision, Ref: s.Ref},
		StartedAt: s.Started,
	}
	if s.Test == runfile.TestFresh {
		h.Settings.Window, h.Settings.Stride = s.Window, s.Window/2
	} else {
		h.Settings.Formulation = "choice-logprob"
	}
	if s.PR > 0 {
		pr := s.PR
		h.Git.PR = &pr
	}
	if s.Unverified != "" {
		h.Settings.TextPrep = &runfile.TextPrep{By: runfile.PrepHF, Unverified: s.Unverified}
	}
	return h
}

var probeTypes = []string{"add", "mul", "units", "sequence", "word_problem", "compare", "syllogism"}
var sources = []string{"wikipedia", "arxiv"}

// Run makes the run a Spec describes.
func (s Spec) Run() *runfile.Run {
	s.defaults()
	rng := rand.New(rand.NewPCG(s.Seed, 0x5e7))
	r := &runfile.Run{Header: s.Header()}
	for i := range s.Records {
		if s.Test == runfile.TestFresh {
			bytes := 400 + rng.IntN(3000)
			bpb := math.Max(0.05, s.Score+rng.NormFloat64()*0.15)
			r.Docs = append(r.Docs, runfile.Doc{
				ID: fmt.Sprintf("doc-%05d", i), Source: sources[i%len(sources)], Bytes: bytes,
				Tokens: bytes / 4, Bits: bpb * float64(bytes), Windows: 1,
			})
			continue
		}
		typ := probeTypes[i%len(probeTypes)]
		answer := rng.IntN(4)
		pred := answer
		if rng.Float64()*100 >= s.Score {
			pred = (answer + 1 + rng.IntN(3)) % 4
		}
		lp := []float64{-9, -9, -9, -9}
		lp[pred] = -2
		r.Items = append(r.Items, runfile.Item{
			ID: fmt.Sprintf("pea-%s-%d-%d", typ, 1+i%3, i), Type: typ, Level: 1 + i%3,
			Logprobs: lp, Pred: pred, Answer: answer, Correct: pred == answer,
		})
	}
	return r
}

// Body is the run file a Spec describes, as uploaded.
func (s Spec) Body() []byte {
	var b bytes.Buffer
	if err := runfile.Encode(&b, s.Run()); err != nil {
		panic(err) // encoding plain structs cannot fail
	}
	return b.Bytes()
}
