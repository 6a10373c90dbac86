package action

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/action/failon"
)

func TestParsePolicy(t *testing.T) {
	t.Parallel()
	p, err := ParsePolicy("p.yml", []byte(`# the gate
fail-on: settings-mismatch
min-effect-bpb: 0.001
min-effect-accuracy: 0.5
tests: [probes, fresh]
fresh-data: hf://acme/fresh@0123456789abcdef0123456789abcdef01234567
probe-items: items.jsonl
baseline: revision:0123456789abcdef0123456789abcdef01234567
until: all
budget: 400
max-drift-bpb: 0.01
max-drift-accuracy: 2
anchor: v1.0
accept-label: udgam-ci/accept
accept-roles: Admin, write
`))
	if err != nil {
		t.Fatal(err)
	}
	want := GateSettings{FailOn: failon.Mismatch, MinEffectBPB: 0.001, MinEffectAccuracy: 0.5, Tests: []string{"probes", "fresh"},
		FreshData: "hf://acme/fresh@0123456789abcdef0123456789abcdef01234567", ProbeItems: "items.jsonl",
		Baseline: "revision:0123456789abcdef0123456789abcdef01234567", Until: UntilAll, Budget: "400",
		MaxDriftBPB: 0.01, MaxDriftAccuracy: 2, Anchor: "v1.0"}
	if !gateEqual(p.Gate, want) || p.AcceptLabel != "udgam-ci/accept" || !slices.Equal(p.AcceptRoles, []string{"admin", "write"}) {
		t.Errorf("parsed %+v", p)
	}

	// What the file leaves out is the input's default; an empty file is
	// every default.
	for _, src := range []string{"", "# nothing yet\n", "accept-label: ok\n"} {
		p, err := ParsePolicy("p.yml", []byte(src))
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		def, _ := ReadInputs(actionWith(map[string]string{"INPUT_MODEL": "acme/tiny", "INPUT_REVISION": testSHA}), isLocal)
		if !gateEqual(p.Gate, def.gate()) || !slices.Equal(p.AcceptRoles, DefaultAcceptRoles) {
			t.Errorf("%q: %+v, want the inputs' defaults %+v", src, p.Gate, def.gate())
		}
	}
}

// A policy the Action cannot read exactly fails, naming the file and
// line: a typo must not loosen the gate by being ignored.
func TestParsePolicyErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ src, want string }{
		{"fail-on: regression\nmin-efect-bpb: 0.1\n", `p.yml:2: unknown setting "min-efect-bpb"`},
		{"fail-on: regression\nfail-on: never\n", "p.yml:2: fail-on is set twice (first on line 1)"},
		{"\n\nfail-on: sometimes\n", `p.yml:3: fail-on: "sometimes" is not one of regression`},
		{"tests: [fresh, mmlu]\n", `p.yml:1: tests: "mmlu" is not one of fresh, probes`},
		{"budget: soon\n", `p.yml:1: budget: budget "soon"`},
		{"min-effect-bpb: -1\n", `p.yml:1: min-effect-bpb: "-1" is not a number >= 0`},
		{"max-drift-bpb: lots\n", `p.yml:1: max-drift-bpb: "lots" is not a number`},
		{"baseline: 'revision:'\n", `p.yml:1: baseline: "revision:" names no revision`},
		{"accept-roles: read\n", "p.yml:1: accept-roles:"},
		{"tests: {fresh: true}\n", "p.yml:1: tests: want a value or a list of values"},
		{"- fail-on\n", "p.yml:1: want a mapping"},
		{"fail-on: [\n", "policy p.yml: yaml:"},
	} {
		_, err := ParsePolicy("p.yml", []byte(tt.src))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want %q", tt.src, err, tt.want)
		}
	}
}

func gateEqual(a, b GateSettings) bool {
	eq := slices.Equal(a.Tests, b.Tests)
	a.Tests, b.Tests = nil, nil
	return eq && reflect.DeepEqual(a, b)
}

// defaultGate is the gate with every input at its default.
func defaultGate(t *testing.T) GateSettings {
	t.Helper()
	p, err := ParsePolicy("defaults", nil)
	if err != nil {
		t.Fatal(err)
	}
	return p.Gate
}

// TestMergeGate takes each setting in turn: a pull request that loosens
// it is judged by the base's value and the change is named; accepted (a
// maintainer's label), its own value applies; a stricter value applies.
func TestMergeGate(t *testing.T) {
	t.Parallel()
	base := defaultGate(t)
	base.Until, base.Budget = UntilAll, "45m"
	base.Baseline, base.FreshData, base.ProbeItems = "server", "hf://acme/fresh@1", "hf://acme/probes@1"
	base.MaxDriftBPB, base.MaxDriftAccuracy, base.Anchor = 0.01, 2, "v1"
	tests := []struct {
		setting          string
		looser, stricter func(*GateSettings)
	}{
		{"fail-on", func(g *GateSettings) { g.FailOn = failon.Never }, func(g *GateSettings) { g.FailOn = failon.Mismatch }},
		{"min-effect-bpb", func(g *GateSettings) { g.MinEffectBPB = 0.05 }, func(g *GateSettings) { g.MinEffectBPB = 0 }},
		{"min-effect-accuracy", func(g *GateSettings) { g.MinEffectAccuracy = 5 }, func(g *GateSettings) { g.MinEffectAccuracy = 0.5 }},
		{"tests", func(g *GateSettings) { g.Tests = []string{"probes"} }, nil},
		{"fresh-data", func(g *GateSettings) { g.FreshData = "hf://acme/easy@1" }, nil},
		{"probe-items", func(g *GateSettings) { g.ProbeItems = "" }, nil},
		{"baseline", func(g *GateSettings) { g.Baseline = BaselineNone }, nil},
		{"until", func(g *GateSettings) { g.Until = UntilDecided }, nil},
		{"budget", func(g *GateSettings) { g.Budget = "5m" }, func(g *GateSettings) { g.Budget = "1h" }},
		{"max-drift-bpb", func(g *GateSettings) { g.MaxDriftBPB = 0.05 }, func(g *GateSettings) { g.MaxDriftBPB = 0.005 }},
		{"max-drift-accuracy", func(g *GateSettings) { g.MaxDriftAccuracy = 10 }, func(g *GateSettings) { g.MaxDriftAccuracy = 1 }},
		{"anchor", func(g *GateSettings) { g.Anchor = "v0-weak" }, nil},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.setting] = true
		pr := base
		pr.Tests = slices.Clone(base.Tests)
		tt.looser(&pr)
		eff, changes := MergeGate(base, pr, false)
		if len(changes) != 1 || changes[0].Setting != tt.setting || !changes[0].Looser {
			t.Errorf("%s loosened: changes %+v, want one looser change of %s", tt.setting, changes, tt.setting)
		}
		if !gateEqual(eff, base) {
			t.Errorf("%s loosened: judged by %+v, want the base's %+v", tt.setting, eff, base)
		}
		eff, changes = MergeGate(base, pr, true)
		if len(changes) != 1 || !changes[0].Looser || !gateEqual(eff, pr) {
			t.Errorf("%s loosened and accepted: judged by %+v (changes %+v), want the pull request's %+v", tt.setting, eff, changes, pr)
		}
		if tt.stricter == nil {
			continue
		}
		pr = base
		pr.Tests = slices.Clone(base.Tests)
		tt.stricter(&pr)
		eff, changes = MergeGate(base, pr, false)
		if len(changes) != 1 || changes[0].Setting != tt.setting || changes[0].Looser || !gateEqual(eff, pr) {
			t.Errorf("%s stricter: judged by %+v, changes %+v; want the pull request's own %+v", tt.setting, eff, changes, pr)
		}
	}
	for _, r := range gateRules {
		if !covered[r.name] {
			t.Errorf("setting %s has no case here", r.name)
		}
	}

	// Adding a test is stricter; the drift settings a pull request has no
	// input for yet inherit the base's.
	pr := base
	pr.Tests = []string{"fresh", "probes", "fresh"}[:2]
	pr.MaxDriftBPB, pr.MaxDriftAccuracy, pr.Anchor = 0, 0, ""
	if eff, changes := MergeGate(base, pr, false); len(changes) != 0 || !gateEqual(eff, base) {
		t.Errorf("unset drift settings: judged by %+v, changes %+v; want the base's", eff, changes)
	}
	base.Tests = []string{"fresh"}
	if eff, changes := MergeGate(base, pr, false); len(changes) != 1 || changes[0].Looser || !slices.Equal(eff.Tests, pr.Tests) {
		t.Errorf("a test added: judged by %+v, changes %+v", eff, changes)
	}
}

// fail-on is looser when it lets pass a kind of finding the base fails on;
// settings-mismatch and contamination each fail on one kind the other does
// not, so a change between them is looser both ways.
func TestFailOnLooser(t *testing.T) {
	t.Parallel()
	order := []string{failon.Never, failon.Regression, failon.Mismatch, failon.Contamination}
	want := map[[2]string]bool{
		{failon.Regression, failon.Never}: true, {failon.Mismatch, failon.Never}: true, {failon.Contamination, failon.Never}: true,
		{failon.Mismatch, failon.Regression}: true, {failon.Contamination, failon.Regression}: true,
		{failon.Mismatch, failon.Contamination}: true, {failon.Contamination, failon.Mismatch}: true,
	}
	for _, base := range order {
		for _, pr := range order {
			if got := failOnLooser(base, pr); got != want[[2]string{base, pr}] {
				t.Errorf("base %s, pull request %s: looser %v", base, pr, got)
			}
		}
	}
}

func TestBudgetLooser(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		base, pr string
		looser   bool
	}{
		{"45m", "", false}, {"", "45m", true}, {"45m", "1h", false}, {"45m", "44m", true},
		{"400", "500", false}, {"400", "399", true}, {"400", "45m", true}, {"45m", "400", true},
	} {
		if got := budgetLooser(tt.base, tt.pr); got != tt.looser {
			t.Errorf("base %q, pull request %q: looser %v, want %v", tt.base, tt.pr, got, tt.looser)
		}
	}
}

// The policy a reader copies (the example file, docs/action.md's block)
// is one the Action reads, with the label and the drift budget set.
func TestExamplePolicies(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../examples/policy/udgam-ci.yml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../docs/action.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "```yaml\n# .github/udgam-ci.yml")
	block, _, _ = strings.Cut("# "+block, "```")
	if !ok || block == "" {
		t.Fatal("docs/action.md has no ```yaml block of .github/udgam-ci.yml")
	}
	for name, src := range map[string]string{"examples/policy/udgam-ci.yml": string(b), "docs/action.md": block} {
		p, err := ParsePolicy(name, []byte(src))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if p.AcceptLabel == "" || p.Gate.MaxDriftBPB == 0 || p.Gate.MaxDriftAccuracy == 0 || !slices.Equal(p.AcceptRoles, DefaultAcceptRoles) {
			t.Errorf("%s: %+v", name, p)
		}
	}
}

// The same tests in another order are the same gate.
func TestMergeGateTestsOrder(t *testing.T) {
	t.Parallel()
	base := defaultGate(t)
	pr := base
	pr.Tests = []string{"probes", "fresh"}
	if eff, changes := MergeGate(base, pr, false); len(changes) != 0 || !slices.Equal(eff.Tests, pr.Tests) {
		t.Errorf("judged by %+v, changes %+v", eff, changes)
	}
}
