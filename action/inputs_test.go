package action

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/action/failon"

	"github.com/sethvargo/go-githubactions"
)

const testSHA = "0123456789abcdef0123456789abcdef01234567"

func actionWith(env map[string]string) *githubactions.Action {
	getenv := inputGetenv(func(k string) string { return env[k] })
	return githubactions.New(githubactions.WithGetenv(getenv), githubactions.WithWriter(io.Discard))
}

func TestReadInputs(t *testing.T) {
	t.Parallel()
	local := filepath.Join(t.TempDir(), "m.gguf")
	if err := os.WriteFile(local, []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		env   map[string]string
		check func(t *testing.T, in Inputs)
		err   []string // substrings the error must hold
	}{
		{
			name: "defaults",
			env:  map[string]string{"INPUT_MODEL": "acme/tiny", "INPUT_REVISION": testSHA},
			check: func(t *testing.T, in Inputs) {
				if !slices.Equal(in.Tests, []string{"fresh", "probes"}) || in.Dtype != "f32" || in.Window != 2048 ||
					in.Stride != 1024 || in.FailOn != failon.Regression || !in.Comment || in.Baseline != "server" ||
					in.ModelName != "acme/tiny" || in.MinEffectBPB != 0.002 || in.MinEffectAcc != 1 {
					t.Errorf("defaults: %+v", in)
				}
			},
		},
		{
			name: "hyphenated and composite-step spellings",
			env: map[string]string{"INPUT_MODEL": local, "INPUT_TESTS": " probes , probes", "INPUT_FAIL_ON": "settings-mismatch",
				"INPUT_MIN-EFFECT-BPB": "0.01", "INPUT_ADD-BOS": "No", "INPUT_DTYPE": "q8_0", "INPUT_COMMENT": "false",
				"INPUT_BASELINE": "base/fresh.jsonl,base/probes.jsonl", "INPUT_SERVER-URL": "https://evals.example/", "INPUT_SERVER-TOKEN": "t"},
			check: func(t *testing.T, in Inputs) {
				if !slices.Equal(in.Tests, []string{"probes"}) || in.FailOn != failon.Mismatch || in.MinEffectBPB != 0.01 ||
					in.AddBOS != "no" || in.Dtype != "q8_0" || in.Comment || in.ServerURL != "https://evals.example" {
					t.Errorf("parsed %+v", in)
				}
			},
		},
		{
			name: "unpinned hub revision",
			env:  map[string]string{"INPUT_MODEL": "acme/tiny", "INPUT_REVISION": "main"},
			err:  []string{`input revision: "main" is not a 40-hex commit sha`, "allow-unpinned"},
		},
		{
			name: "unpinned allowed",
			env:  map[string]string{"INPUT_MODEL": "acme/tiny", "INPUT_REVISION": "main", "INPUT_ALLOW-UNPINNED": "true"},
			check: func(t *testing.T, in Inputs) {
				if !in.AllowUnpinned {
					t.Error("allow-unpinned not read")
				}
			},
		},
		{
			name: "every problem at once",
			env: map[string]string{"INPUT_MODEL": "acme/tiny", "INPUT_DTYPE": "f8", "INPUT_FAIL-ON": "always", "INPUT_WINDOW": "big",
				"INPUT_TESTS": "fresh,mmlu", "INPUT_MIN-EFFECT-ACCURACY": "-1", "INPUT_BASELINE": "revision:", "INPUT_COMMENT": "maybe"},
			err: []string{"input revision: required", `input dtype: "f8"`, `input fail-on: "always"`, `input window: "big"`,
				`input tests: "mmlu"`, `input min-effect-accuracy: "-1"`, `input baseline: "revision:" names no revision`, `input comment: "maybe"`},
		},
		{
			name: "no model",
			env:  map[string]string{},
			err:  []string{"input model: required"},
		},
		{
			name: "missing local path",
			env:  map[string]string{"INPUT_MODEL": "./nope/m.gguf"},
			err:  []string{`input model: "./nope/m.gguf" is neither an existing path nor a hub id`},
		},
		{
			name: "anchor and drift budget",
			env: map[string]string{"INPUT_MODEL": local, "INPUT_ANCHOR": "server", "INPUT_SERVER-URL": "https://evals.example",
				"INPUT_MAX-DRIFT-BPB": "0.02"},
			check: func(t *testing.T, in Inputs) {
				if in.Anchor != AnchorServer || in.MaxDriftBPB != 0.02 || in.MaxDriftAcc != 3 {
					t.Errorf("parsed %+v", in)
				}
			},
		},
		{
			name: "anchor that cannot be reached",
			env:  map[string]string{"INPUT_MODEL": local, "INPUT_ANCHOR": "server", "INPUT_MAX-DRIFT-ACCURACY": "-2"},
			err:  []string{"input anchor: server needs server-url", `input max-drift-accuracy: "-2"`},
		},
		{
			name: "anchor run id without a server",
			env:  map[string]string{"INPUT_MODEL": local, "INPUT_ANCHOR": "fresh-0042,"},
			err:  []string{`input anchor: "fresh-0042" is neither a run file nor, without server-url, a run on the report server`},
		},
		{
			name: "stride over window",
			env:  map[string]string{"INPUT_MODEL": local, "INPUT_WINDOW": "512", "INPUT_STRIDE": "1024"},
			err:  []string{"input stride: 1024 is larger than window 512"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := ReadInputs(actionWith(tt.env), isLocal)
			if len(tt.err) > 0 {
				if err == nil {
					t.Fatalf("no error; inputs %+v", in)
				}
				for _, want := range tt.err {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q lacks %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, in)
		})
	}
}
