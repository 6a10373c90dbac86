package action

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// notScoring are the inputs that never change a baseline's scores, each
// with why; every other input must change the baseline cache key, so an
// input added later that changes scores fails this test until it is in
// the key (issue 39).
var notScoring = map[string]string{
	"ModelName":      "a display name",
	"Revision":       "the head's; the baseline's revision is the key's rev",
	"AllowUnpinned":  "accepts a branch for the head's revision",
	"Baseline":       "names the baseline's revision, the key's rev",
	"Tests":          "which tests run; the key names its test",
	"Threads":        "scores are the same at every thread count (llamatest.Invariance)",
	"ServerURL":      "where runs go",
	"ServerToken":    "where runs go",
	"GitHubToken":    "where the comment goes",
	"Comment":        "whether a comment is posted",
	"FailOn":         "the job's exit code",
	"MinEffectBPB":   "judges comparisons, not scores",
	"MinEffectAcc":   "judges comparisons, not scores",
	"Anchor":         "another run the head is compared with; the baseline is scored as before",
	"MaxDriftBPB":    "judges the comparison with the anchor",
	"MaxDriftAcc":    "judges the comparison with the anchor",
	"WorkDir":        "where head runs are written",
	"CacheDir":       "where the cache is",
	"Resamples":      "the comparison's bootstrap",
	"PR":             "which pull request is commented on",
	"Until":          "a baseline is always scored whole",
	"Budget":         "a baseline is always scored whole",
	"Artifact":       "audits the head's artifact",
	"MaxDegradation": "judges the audit",
	"Policy":         "where the gate's settings are read",
}

// TestBaselineKeyHoldsEveryScoringInput changes each input in turn: one
// that changes scores must change the cached baseline's key for some
// test, one that does not must leave it, and so must the engine and
// udgam-ci's build.
func TestBaselineKeyHoldsEveryScoringInput(t *testing.T) {
	t.Parallel()
	base := Inputs{Model: "acme/m", Subfolder: "ckpt", Dtype: "f16", AddBOS: "auto", Window: 2048, Stride: 1024,
		FreshData: "hf://d@1", ProbeItems: "hf://p@1", ProbeVariants: "all", GPU: "cpu", TrainingData: []string{"t"}}
	keys := func(in Inputs, engine, build string) string {
		return baselineKey(in, "abc", runfile.TestFresh, engine, build) + " " + baselineKey(in, "abc", runfile.TestProbes, engine, build)
	}
	want := keys(base, "e1", "b1")
	for _, other := range [][2]string{{"e2", "b1"}, {"e1", "b2"}} {
		if keys(base, other[0], other[1]) == want {
			t.Errorf("engine %s, build %s: the same key as engine e1, build b1", other[0], other[1])
		}
	}
	v := reflect.ValueOf(&base).Elem()
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		in := base
		in.TrainingData = append([]string(nil), base.TrainingData...)
		f := reflect.ValueOf(&in).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(f.String() + "x")
		case reflect.Bool:
			f.SetBool(!f.Bool())
		case reflect.Int:
			f.SetInt(f.Int() + 1)
		case reflect.Float64:
			f.SetFloat(f.Float() + 1)
		case reflect.Slice:
			f.Set(reflect.Append(f, reflect.ValueOf("x")))
		case reflect.Struct:
			f.Field(0).SetFloat(f.Field(0).Float() + 1)
		default:
			t.Fatalf("input %s: a %s this test cannot change", name, f.Kind())
		}
		changed := keys(in, "e1", "b1") != want
		why, ok := notScoring[name]
		switch {
		case !ok && !changed:
			t.Errorf("input %s (%s) changes scores but not the baseline's cache key: add it to baselineKey, or to notScoring with why not", name, kebab(name))
		case ok && changed:
			t.Errorf("input %s changes the baseline's cache key, but notScoring says %q", name, why)
		}
	}
}

// TestActionYAMLBaselineCacheKey: action.yml's key for the cache of
// baseline runs names every input the baseline's key holds and a hash of
// udgam-ci's own code, so a restored cache never brings back runs another
// version or other settings scored (baselineKey would not use them, but
// they would take the cache's place).
func TestActionYAMLBaselineCacheKey(t *testing.T) {
	t.Parallel()
	var key string
	for _, s := range readAction(t).Runs.Steps {
		if s.Name == "Cache the baseline's runs" {
			key = s.With["key"]
		}
	}
	if key == "" {
		t.Fatal("action.yml has no step \"Cache the baseline's runs\" with a key")
	}
	want := []string{"inputs.baseline", "inputs.tests", "steps.keys.outputs.source"}
	v := reflect.ValueOf(Inputs{})
	for i := range v.NumField() {
		if name := v.Type().Field(i).Name; notScoring[name] == "" {
			want = append(want, "inputs."+kebab(name))
		}
	}
	for _, w := range want {
		if !strings.Contains(key, "${{ "+w+" }}") {
			t.Errorf("the baseline cache key lacks %s: %s", w, key)
		}
	}
}

// kebab is an Inputs field's input name: AddBOS is add-bos.
func kebab(field string) string {
	var b strings.Builder
	r := []rune(field)
	for i, c := range r {
		if i > 0 && unicode.IsUpper(c) && (unicode.IsLower(r[i-1]) || i+1 < len(r) && unicode.IsLower(r[i+1])) {
			b.WriteByte('-')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return fmt.Sprint(b.String())
}
