package convert_test

import (
	"context"
	"encoding/json"
	"github.com/ollama/ollama/fs/ggml"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/udgamlabs/udgam-ci/runner/convert"
	"github.com/udgamlabs/udgam-ci/runner/convert/converttest"
	"github.com/udgamlabs/udgam-ci/runner/llama"
	"github.com/udgamlabs/udgam-ci/runner/testmodel"
)

// ssmCase is one state-space architecture: a tiny checkpoint writer and
// the float64 reference that reads the same files.
type ssmCase struct {
	name  string
	write func(dir string) (map[string]converttest.Tensor, error)
	ref   func(config []byte, w map[string][]float32) (*testmodel.SSMReference, error)
}

var ssmCases = []ssmCase{
	{"falcon-h1", converttest.SmallFalconH1.Write, testmodel.FalconH1Reference},
	{"mamba2", converttest.SmallMamba2.Write, testmodel.Mamba2Reference},
	{"mamba", converttest.SmallMamba.Write, testmodel.MambaReference},
}

// writeSSM writes c's checkpoint and its reference.
func writeSSM(t *testing.T, c ssmCase) (dir string, ref *testmodel.SSMReference) {
	t.Helper()
	dir = t.TempDir()
	tensors, err := c.write(dir)
	if err != nil {
		t.Fatal(err)
	}
	config, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	w := map[string][]float32{}
	for name, tt := range tensors {
		w[name] = tt.Values
	}
	if ref, err = c.ref(config, w); err != nil {
		t.Fatal(err)
	}
	return dir, ref
}

// randomSequence is n token ids drawn uniformly from the tiny vocabulary.
func randomSequence(seed uint64, n int) []int32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	seq := make([]int32, n)
	for i := range seq {
		seq[i] = int32(rng.IntN(converttest.Vocab))
	}
	return seq
}

// everyPosition asks for every next-token log-probability of seq.
func everyPosition(seq []int32) runner.Request {
	br := runner.Branch{Tokens: seq}
	for p := 1; p < len(seq); p++ {
		br.Positions = append(br.Positions, p)
	}
	return runner.Request{Branches: []runner.Branch{br}}
}

// TestSSMArchitecturesMatchReference converts each tiny checkpoint to f32,
// scores a 2,048-token sequence through llama.cpp and compares every
// token's log-probability with the float64 forward pass.
func TestSSMArchitecturesMatchReference(t *testing.T) {
	const n, tol = 2048, 1e-4
	for _, c := range ssmCases {
		t.Run(c.name, func(t *testing.T) {
			dir, ref := writeSSM(t, c)
			out := filepath.Join(t.TempDir(), "m.gguf")
			if _, err := convert.Dir(dir, out, convert.Options{Dtype: "f32"}); err != nil {
				t.Fatal(err)
			}
			m, err := llama.Load(out, llama.Options{Threads: 2, Context: n, Parallel: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			req := []runner.Request{everyPosition(randomSequence(3, n))}
			want, err := ref.Score(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.Score(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			worst, at := 0.0, 0
			for i, g := range got[0][0] {
				if d := math.Abs(g - want[0][0][i]); d > worst || math.IsNaN(d) {
					worst, at = d, i
				}
			}
			t.Logf("%s: largest difference %.3g nats at token %d of %d (reference %.4f)", c.name, worst, at+1, n, want[0][0][at])
			if !(worst <= tol) {
				t.Errorf("token %d: llama.cpp %.6f, reference %.6f: %.3g nats apart, more than %g", at+1, got[0][0][at], want[0][0][at], worst, tol)
			}
		})
	}
}

// TestFalconH1EveryMultiplierCounts makes the match above mean something
// for each µP multiplier: changing any one of them (one entry of a list at
// a time) in config.json moves the reference by far more than the
// tolerance, so a converter that left one out would fail.
func TestFalconH1EveryMultiplierCounts(t *testing.T) {
	c := ssmCases[0]
	dir, ref := writeSSM(t, c)
	config, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	tensors := map[string][]float32{}
	for name, tt := range converttest.SmallFalconH1.Checkpoint().Tensors {
		tensors[name] = tt.Values
	}
	req := []runner.Request{everyPosition(randomSequence(5, 64))}
	base, err := ref.Score(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(config, &raw); err != nil {
		t.Fatal(err)
	}
	type change struct {
		key   string
		index int // -1 for a scalar
	}
	var changes []change
	for key, v := range converttest.SmallFalconH1.Multipliers {
		if list, ok := v.([]float64); ok {
			for i := range list {
				changes = append(changes, change{key, i})
			}
		} else {
			changes = append(changes, change{key, -1})
		}
	}
	for _, ch := range changes {
		changed := map[string]any{}
		for k, v := range raw {
			changed[k] = v
		}
		if ch.index < 0 {
			changed[ch.key] = raw[ch.key].(float64) * 1.5
		} else {
			list := slices.Clone(raw[ch.key].([]any))
			list[ch.index] = list[ch.index].(float64) * 1.5
			changed[ch.key] = list
		}
		b, _ := json.Marshal(changed)
		other, err := testmodel.FalconH1Reference(b, tensors)
		if err != nil {
			t.Fatal(err)
		}
		got, err := other.Score(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for i, g := range got[0][0] {
			worst = max(worst, math.Abs(g-base[0][0][i]))
		}
		if worst < 1e-3 {
			t.Errorf("%s[%d] x1.5 moves the reference by only %.2g nats", ch.key, ch.index, worst)
		}
	}
}

// TestSSMDtypes converts each architecture to every output dtype: the
// scan's tensors stay float32 (ggml's CPU ssm_conv asserts it, aborting the
// process), the model loads and scores, and its log-probabilities stay near
// the float32 file's.
func TestSSMDtypes(t *testing.T) {
	for _, c := range ssmCases {
		t.Run(c.name, func(t *testing.T) {
			dir, ref := writeSSM(t, c)
			req := []runner.Request{everyPosition(randomSequence(9, 96))}
			want, err := ref.Score(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			for _, dtype := range convert.Dtypes {
				out := filepath.Join(t.TempDir(), dtype+".gguf")
				if _, err := convert.Dir(dir, out, convert.Options{Dtype: dtype}); err != nil {
					t.Fatalf("%s: %v", dtype, err)
				}
				g, err := testmodel.ReadGGUF(out)
				if err != nil {
					t.Fatal(err)
				}
				for name, tt := range g.Tensors {
					scan := strings.Contains(name, "ssm_conv1d") || strings.HasSuffix(name, "ssm_a") ||
						strings.HasSuffix(name, "ssm_d") || strings.Contains(name, "norm")
					if scan && tt.Kind != uint32(ggml.TensorTypeF32) {
						t.Errorf("%s: %s has type %d, want F32", dtype, name, tt.Kind)
					}
				}
				m, err := llama.Load(out, llama.Options{Threads: 2, Context: 256, Parallel: 1})
				if err != nil {
					t.Fatalf("%s: %v", dtype, err)
				}
				got, err := m.Score(context.Background(), req)
				m.Close()
				if err != nil {
					t.Fatalf("%s: %v", dtype, err)
				}
				var sum float64
				for i, v := range got[0][0] {
					sum += math.Abs(v - want[0][0][i])
				}
				mean := sum / float64(len(got[0][0]))
				t.Logf("%s %s: mean difference from the float64 reference %.2g nats", c.name, dtype, mean)
				if !(mean < 0.05) {
					t.Errorf("%s: mean difference %.3g nats from the reference", dtype, mean)
				}
			}
		})
	}
}
