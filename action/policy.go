package action

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/udgamlabs/udgam-ci/action/failon"

	"github.com/udgamlabs/udgam-ci/evals"
	"gopkg.in/yaml.v3"
)

// DefaultPolicyPath is where the gate's policy lives in the training
// repository; the Action reads it at a pull request's base commit.
const DefaultPolicyPath = ".github/udgam-ci.yml"

// DefaultAcceptRoles are the repository roles whose label accepts a looser
// gate when the policy names none: the people who maintain the repository.
var DefaultAcceptRoles = []string{"admin", "maintain"}

// GateSettings are the settings that decide the verdict. A pull request's
// inputs give one set, the base's policy file another; MergeGate decides
// which applies, setting by setting.
type GateSettings struct {
	FailOn            string
	MinEffectBPB      float64
	MinEffectAccuracy float64
	Tests             []string
	FreshData         string
	ProbeItems        string
	Baseline          string
	Until             string
	Budget            string
	// The drift budget since the anchor run, and the anchor (issue 48):
	// a pull request's budget of 0 (none) inherits the base's.
	MaxDriftBPB      float64 // 0: none
	MaxDriftAccuracy float64 // 0: none
	Anchor           string
}

// gate is the inputs' part that decides the verdict.
func (in *Inputs) gate() GateSettings {
	return GateSettings{FailOn: in.FailOn, MinEffectBPB: in.MinEffectBPB, MinEffectAccuracy: in.MinEffectAcc,
		Tests: slices.Clone(in.Tests), FreshData: in.FreshData, ProbeItems: in.ProbeItems, Baseline: in.Baseline,
		Until: in.Until, Budget: in.Budget, MaxDriftBPB: in.MaxDriftBPB, MaxDriftAccuracy: in.MaxDriftAcc, Anchor: in.Anchor}
}

// setGate makes g the settings the run is judged by.
func (in *Inputs) setGate(g GateSettings) {
	in.FailOn, in.MinEffectBPB, in.MinEffectAcc = g.FailOn, g.MinEffectBPB, g.MinEffectAccuracy
	in.Tests, in.FreshData, in.ProbeItems, in.Baseline = slices.Clone(g.Tests), g.FreshData, g.ProbeItems, g.Baseline
	in.Until, in.Budget = g.Until, g.Budget
	in.MaxDriftBPB, in.MaxDriftAcc, in.Anchor = g.MaxDriftBPB, g.MaxDriftAccuracy, g.Anchor
}

// Policy is a policy file: the base's gate and who may accept a looser one.
type Policy struct {
	Gate GateSettings
	// AcceptLabel, applied to a pull request by someone whose role is in
	// AcceptRoles, accepts that pull request's looser settings; "" for
	// no such label.
	AcceptLabel string
	AcceptRoles []string
}

// policyKeys are the keys a policy file may hold: the gate's settings,
// named as the inputs are, and the label's.
var policyKeys = []string{"fail-on", "min-effect-bpb", "min-effect-accuracy", "tests", "fresh-data", "probe-items",
	"baseline", "until", "budget", "max-drift-bpb", "max-drift-accuracy", "anchor", "accept-label", "accept-roles"}

// ParsePolicy reads a policy file (YAML: one mapping of policyKeys). A
// setting it leaves out is the input's default; an unknown key, a bad
// value or a key given twice is an error naming the file and line, since
// a typo must not quietly loosen the gate.
func ParsePolicy(name string, b []byte) (Policy, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return Policy{}, fmt.Errorf("policy %s: %w", name, err)
	}
	var errs []string
	fail := func(line int, format string, args ...any) {
		errs = append(errs, fmt.Sprintf("%s:%d: %s", name, line, fmt.Sprintf(format, args...)))
	}
	vals, lines := map[string]string{}, map[string]int{}
	if len(doc.Content) > 0 {
		m := doc.Content[0]
		if m.Kind != yaml.MappingNode {
			return Policy{}, fmt.Errorf("policy %s:%d: want a mapping of settings (fail-on: regression, ...)", name, m.Line)
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			switch {
			case !slices.Contains(policyKeys, k.Value):
				fail(k.Line, "unknown setting %q (known: %s)", k.Value, strings.Join(policyKeys, ", "))
				continue
			case lines[k.Value] != 0:
				fail(k.Line, "%s is set twice (first on line %d)", k.Value, lines[k.Value])
				continue
			}
			lines[k.Value] = k.Line
			s, err := scalarOrList(v)
			if err != nil {
				fail(v.Line, "%s: %v", k.Value, err)
			}
			vals[k.Value] = s
		}
	}
	line := func(key string) int { return max(1, lines[key]) }
	f := fields{
		get: func(key string) string {
			if v, ok := vals[key]; ok && v != "" {
				return v
			}
			return InputDefault(key)
		},
		bad: func(key, format string, args ...any) { fail(line(key), key+": "+format, args...) },
	}
	p := Policy{Gate: f.gate(), AcceptLabel: strings.TrimSpace(vals["accept-label"]), AcceptRoles: DefaultAcceptRoles}
	if r := vals["accept-roles"]; r != "" {
		p.AcceptRoles = nil
		for _, role := range strings.Split(r, ",") {
			if role = strings.ToLower(strings.TrimSpace(role)); role != "" && !slices.Contains(p.AcceptRoles, role) {
				p.AcceptRoles = append(p.AcceptRoles, role)
			}
		}
		if len(p.AcceptRoles) == 0 || slices.Contains(p.AcceptRoles, "read") || slices.Contains(p.AcceptRoles, "none") {
			fail(line("accept-roles"), "accept-roles: %q: name the roles that may accept a looser gate (admin, maintain, write, ...); read and none would let anyone", r)
		}
	}
	if len(errs) > 0 {
		return p, fmt.Errorf("policy %s", strings.Join(errs, "; "))
	}
	return p, nil
}

// scalarOrList reads a setting's value: a scalar, or a list of scalars
// (tests: [fresh, probes]) joined by commas as the input writes it.
func scalarOrList(n *yaml.Node) (string, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		return strings.TrimSpace(n.Value), nil
	case yaml.SequenceNode:
		var parts []string
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode {
				return "", fmt.Errorf("want a value or a list of values")
			}
			parts = append(parts, strings.TrimSpace(c.Value))
		}
		return strings.Join(parts, ","), nil
	}
	return "", fmt.Errorf("want a value or a list of values")
}

// Change is one gate setting a pull request sets otherwise than the
// base's policy.
type Change struct {
	Setting  string // the input's (and the policy's key's) name
	Base, PR string // as written
	Looser   bool   // else stricter, which simply applies
}

// gateRule is how one setting of GateSettings compares.
type gateRule struct {
	name string
	// show writes the setting as the input takes it; equal means unchanged.
	show func(GateSettings) string
	// looser reports whether the pull request's value judges more leniently.
	looser func(base, pr GateSettings) bool
	// take copies the setting from src.
	take func(dst *GateSettings, src GateSettings)
	// inherit reports a pull request value that means "the base's".
	inherit func(GateSettings) bool
}

// rule builds a gateRule from the field and how its values compare.
func rule[T any](name string, field func(*GateSettings) *T, show func(T) string, looser func(base, pr T) bool) gateRule {
	return gateRule{
		name:   name,
		show:   func(g GateSettings) string { return show(*field(&g)) },
		looser: func(base, pr GateSettings) bool { return looser(*field(&base), *field(&pr)) },
		take:   func(dst *GateSettings, src GateSettings) { *field(dst) = *field(&src) },
	}
}

// inheriting is rule for a setting whose zero value in a pull request
// means "none" and inherits the base's (a drift budget).
func inheriting[T comparable](name string, field func(*GateSettings) *T, show func(T) string, looser func(base, pr T) bool) gateRule {
	r := rule(name, field, show, looser)
	var zero T
	r.inherit = func(g GateSettings) bool { return *field(&g) == zero }
	return r
}

// gateRules says, per setting, what looser means. Adding a setting to
// GateSettings is one line here.
var gateRules = []gateRule{
	rule("fail-on", func(g *GateSettings) *string { return &g.FailOn }, same, failOnLooser),
	rule("min-effect-bpb", func(g *GateSettings) *float64 { return &g.MinEffectBPB }, formatNumber, larger),
	rule("min-effect-accuracy", func(g *GateSettings) *float64 { return &g.MinEffectAccuracy }, formatNumber, larger),
	rule("tests", func(g *GateSettings) *[]string { return &g.Tests }, testSet, dropsAny),
	rule("fresh-data", func(g *GateSettings) *string { return &g.FreshData }, same, differs),
	rule("probe-items", func(g *GateSettings) *string { return &g.ProbeItems }, same, differs),
	rule("baseline", func(g *GateSettings) *string { return &g.Baseline }, same, differs),
	rule("until", func(g *GateSettings) *string { return &g.Until }, same, untilLooser),
	rule("budget", func(g *GateSettings) *string { return &g.Budget }, same, budgetLooser),
	inheriting("max-drift-bpb", func(g *GateSettings) *float64 { return &g.MaxDriftBPB }, formatNumber, largerBudget),
	inheriting("max-drift-accuracy", func(g *GateSettings) *float64 { return &g.MaxDriftAccuracy }, formatNumber, largerBudget),
	inheriting("anchor", func(g *GateSettings) *string { return &g.Anchor }, same, differs),
}

// MergeGate judges a pull request's settings against the base's policy:
// a stricter setting applies, a looser one applies only when accepted
// (a maintainer's label), else the base's does. It returns the settings
// to judge by and every setting the pull request changed.
func MergeGate(base, pr GateSettings, acceptLooser bool) (GateSettings, []Change) {
	eff := pr
	eff.Tests = slices.Clone(pr.Tests)
	var changes []Change
	for _, r := range gateRules {
		if r.inherit != nil && r.inherit(pr) {
			r.take(&eff, base)
			continue
		}
		b, p := r.show(base), r.show(pr)
		if b == p {
			continue
		}
		c := Change{Setting: r.name, Base: b, PR: p, Looser: r.looser(base, pr)}
		changes = append(changes, c)
		if c.Looser && !acceptLooser {
			r.take(&eff, base)
		}
	}
	eff.Tests = slices.Clone(eff.Tests)
	return eff, changes
}

func same(s string) string             { return s }
func formatNumber(f float64) string    { return strconv.FormatFloat(f, 'g', -1, 64) }
func differs(base, pr string) bool     { return base != pr }
func larger(base, pr float64) bool     { return pr > base }
func untilLooser(base, pr string) bool { return base == UntilAll && pr != UntilAll }

// largerBudget: a drift budget of 0 is none, so only a larger nonzero one
// is looser (a pull request's 0 inherits the base's).
func largerBudget(base, pr float64) bool { return base > 0 && pr > base }

// testSet writes tests in a fixed order: the order they run in is not
// part of the gate.
func testSet(tests []string) string { return strings.Join(slices.Sorted(slices.Values(tests)), ",") }

// dropsAny: a pull request that drops a test the base runs is looser;
// adding one is stricter.
func dropsAny(base, pr []string) bool {
	for _, t := range base {
		if !slices.Contains(pr, t) {
			return true
		}
	}
	return false
}

// failOnLooser: the pull request's fail-on lets pass a kind of finding
// the base's fails on.
func failOnLooser(base, pr string) bool {
	for _, kind := range failon.Kinds {
		if failon.Fails(base, kind) && !failon.Fails(pr, kind) {
			return true
		}
	}
	return false
}

// budgetLooser: a budget stops a sequential run sooner when it is smaller;
// none ("") is the strictest, and budgets of other kinds (records, time)
// cannot be ordered, so a change between them counts as looser.
func budgetLooser(base, pr string) bool {
	if pr == "" {
		return false
	}
	if base == "" {
		return true
	}
	bn, bd, err1 := evals.ParseBudget(base)
	pn, pd, err2 := evals.ParseBudget(pr)
	switch {
	case err1 != nil || err2 != nil:
		return true
	case bn > 0 && pn > 0:
		return pn < bn
	case bd > 0 && pd > 0:
		return pd < bd
	}
	return true
}
