package action

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

type actionYAML struct {
	Name   string `yaml:"name"`
	Inputs map[string]struct {
		Description string `yaml:"description"`
		Required    bool   `yaml:"required"`
		Default     string `yaml:"default"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Description string `yaml:"description"`
		Value       string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Using string `yaml:"using"`
		Steps []step `yaml:"steps"`
	} `yaml:"runs"`
}

type step struct {
	ID   string            `yaml:"id"`
	If   string            `yaml:"if"`
	Name string            `yaml:"name"`
	Uses string            `yaml:"uses"`
	Run  string            `yaml:"run"`
	With map[string]string `yaml:"with"`
	Env  map[string]string `yaml:"env"`
}

func readAction(t *testing.T) actionYAML {
	t.Helper()
	b, err := os.ReadFile("../action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var a actionYAML
	if err := yaml.Unmarshal(b, &a); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	return a
}

// stepInputs are action.yml inputs that only its steps read, never the
// binary, with their defaults.
var stepInputs = map[string]string{"setup-go": "true"}

// TestActionYAMLMatchesInputs checks action.yml declares exactly the inputs
// and outputs `udgam-ci action` reads and writes, with the same defaults,
// and passes every input to the binary.
func TestActionYAMLMatchesInputs(t *testing.T) {
	t.Parallel()
	a := readAction(t)
	if a.Runs.Using != "composite" {
		t.Errorf("runs.using %q", a.Runs.Using)
	}
	var declared []string
	for name := range a.Inputs {
		if _, ok := stepInputs[name]; !ok {
			declared = append(declared, name)
		}
	}
	for name, def := range stepInputs {
		in, ok := a.Inputs[name]
		if !ok || in.Default != def || strings.TrimSpace(in.Description) == "" {
			t.Errorf("input %s: declared %v, default %q, want default %q and a description", name, ok, in.Default, def)
		}
		used := 0
		for _, s := range a.Runs.Steps {
			if strings.Contains(s.If, "inputs."+name) {
				used++
			}
		}
		if used == 0 {
			t.Errorf("input %s is read by no step's if:", name)
		}
	}
	slices.Sort(declared)
	want := slices.Sorted(slices.Values(InputNames()))
	if !slices.Equal(declared, want) {
		t.Errorf("action.yml inputs\n %v\nudgam-ci action reads\n %v", declared, want)
	}
	for name, in := range a.Inputs {
		if _, ok := stepInputs[name]; ok {
			continue
		}
		if strings.TrimSpace(in.Description) == "" {
			t.Errorf("input %s has no description", name)
		}
		def := InputDefault(name)
		if name == "github-token" {
			def = "${{ github.token }}" // the workflow token, which the binary cannot know
		}
		if in.Default != def && !(name == "model" && in.Required) {
			t.Errorf("input %s: action.yml default %q, udgam-ci default %q", name, in.Default, def)
		}
	}

	// An input with a fixed set of values names each in its description;
	// the sets live where the values are read (convert, evals, here).
	for name, valid := range map[string][]string{"dtype": validDtypes, "add-bos": validAddBOS, "gpu": validGPU, "fail-on": validFailOn, "tests": validTestNames} {
		desc := a.Inputs[name].Description
		for _, v := range valid {
			if !regexp.MustCompile(`(^|[^\w-])` + regexp.QuoteMeta(v) + `($|[^\w-])`).MatchString(desc) {
				t.Errorf("input %s: action.yml's description does not name %q (one of %s)", name, v, strings.Join(valid, ", "))
			}
		}
	}

	var run *step
	for i, s := range a.Runs.Steps {
		if s.ID == "run" {
			run = &a.Runs.Steps[i]
		}
	}
	if run == nil || !strings.Contains(run.Run, "udgam-ci action") {
		t.Fatal("no step with id run calling udgam-ci action")
	}
	for _, name := range InputNames() {
		env := InputEnv(name)
		if got := run.Env[env]; name != "cache-dir" && got != "${{ inputs."+name+" }}" {
			t.Errorf("run step env %s = %q, want the %s input", env, got, name)
		}
	}
	if _, ok := run.Env[InputEnv("cache-dir")]; !ok {
		t.Error("run step does not pass cache-dir")
	}

	var outs []string
	for name, o := range a.Outputs {
		outs = append(outs, name)
		if o.Value != "${{ steps.run.outputs."+name+" }}" {
			t.Errorf("output %s value %q", name, o.Value)
		}
		if strings.TrimSpace(o.Description) == "" {
			t.Errorf("output %s has no description", name)
		}
	}
	slices.Sort(outs)
	if wantOut := slices.Sorted(slices.Values(OutputNames())); !slices.Equal(outs, wantOut) {
		t.Errorf("action.yml outputs\n %v\nudgam-ci action sets\n %v", outs, wantOut)
	}
}

type workflow struct {
	Name        string                 `yaml:"name"`
	On          map[string]any         `yaml:"on"`
	Permissions map[string]string      `yaml:"permissions"`
	Jobs        map[string]workflowJob `yaml:"jobs"`
}

type workflowJob struct {
	RunsOn      any               `yaml:"runs-on"`
	Permissions map[string]string `yaml:"permissions"`
	Steps       []step            `yaml:"steps"`
}

var exprRE = regexp.MustCompile(`\$\{\{[^}]*\}\}`)

// TestExampleWorkflows parses every example and checks what a reader would
// copy: known inputs, least-privilege permissions, run files kept as
// artifacts, and no fork code checked out where secrets are.
func TestExampleWorkflows(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../examples/workflows/*.yml")
	if err != nil || len(files) < 7 {
		t.Fatalf("examples: %v %v", files, err)
	}
	inputs := readAction(t).Inputs
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var w workflow
			if err := yaml.Unmarshal(b, &w); err != nil {
				t.Fatalf("not valid YAML: %v", err)
			}
			if w.Name == "" || len(w.On) == 0 || len(w.Jobs) == 0 {
				t.Fatalf("incomplete workflow: name %q, on %v, %d jobs", w.Name, w.On, len(w.Jobs))
			}
			for p, v := range w.Permissions {
				if v == "write" && p != "pull-requests" && p != "checks" {
					t.Errorf("permission %s: write; the examples need only pull-requests: write and checks: write", p)
				}
			}
			// A workflow that comments also writes the Check run.
			if w.Permissions["pull-requests"] == "write" && w.Permissions["checks"] != "write" {
				t.Errorf("pull-requests: write without checks: write: the Check run would be refused")
			}
			if w.Permissions["contents"] != "read" {
				t.Errorf("permissions.contents %q, want read", w.Permissions["contents"])
			}
			_, target := w.On["pull_request_target"]
			_, wfRun := w.On["workflow_run"]
			uploads, actions := 0, 0
			for jname, j := range w.Jobs {
				if j.RunsOn == nil || len(j.Steps) == 0 {
					t.Errorf("job %s has no runs-on or steps", jname)
				}
				for _, s := range j.Steps {
					if strings.HasPrefix(s.Uses, "actions/upload-artifact@") {
						uploads++
					}
					if (target || wfRun) && strings.HasPrefix(s.Uses, "actions/checkout@") {
						t.Errorf("job %s checks out code in a %v workflow, which has secrets", jname, w.On)
					}
					if !strings.HasPrefix(s.Uses, "udgamlabs/udgam-ci@") {
						continue
					}
					actions++
					for k, v := range s.With {
						if _, ok := inputs[k]; !ok {
							t.Errorf("job %s passes unknown input %s", jname, k)
						}
						if strings.Contains(exprRE.ReplaceAllString(v, ""), "${{") {
							t.Errorf("input %s: unbalanced expression %q", k, v)
						}
					}
					if _, ok := s.With["model"]; !ok {
						t.Errorf("job %s does not name the model", jname)
					}
				}
			}
			if actions == 0 && !strings.Contains(string(b), "udgam-ci merge") {
				t.Error("neither uses the action nor runs udgam-ci")
			}
			if uploads == 0 && !wfRun {
				t.Error("the run files are not kept with actions/upload-artifact")
			}
		})
	}
}

// TestDockerfile checks the image's contract: a multi-stage portable cgo
// build, a non-root final stage, the server on a /data volume by default.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var stages, finalUser, cmd, volume string
	var froms int
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch strings.ToUpper(f[0]) {
		case "FROM":
			froms++
			stages += line + "\n"
			finalUser = ""
		case "USER":
			finalUser = f[1]
		case "CMD":
			cmd = line
		case "VOLUME":
			volume = line
		}
	}
	if froms < 2 || !strings.Contains(stages, "golang:") || !strings.Contains(stages, "debian:bookworm-slim") {
		t.Errorf("want a golang build stage and a debian:bookworm-slim final stage:\n%s", stages)
	}
	if finalUser == "" || finalUser == "root" || finalUser == "0" {
		t.Errorf("final stage runs as %q", finalUser)
	}
	// Portable: the CPU variants and the launcher that picks one at run
	// time, not a build for the build machine's processor.
	for _, want := range []string{"make variants DIST=/out", "COPY --from=build /out/bin/udgam-ci /usr/local/bin/udgam-ci", "COPY --from=build /out/libexec/ /usr/local/libexec/"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the image is not built portable: no %q", want)
		}
	}
	if !strings.Contains(cmd, `"serve", "--db", "/data/runs.db", "--addr", "0.0.0.0:8080"`) || !strings.Contains(volume, "/data") {
		t.Errorf("CMD %q, VOLUME %q", cmd, volume)
	}
}
