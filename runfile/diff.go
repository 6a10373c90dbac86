package runfile

import (
	"fmt"
	"strconv"
	"strings"
)

// Diff is one setting that differs between two headers.
type Diff struct {
	Key  string `json:"key"`
	Base string `json:"base"`
	Head string `json:"head"`
	// Judged settings change results: comparing across them is refused
	// unless the user insists, and then it is said first and loudly.
	Judged bool `json:"judged"`
}

func (d Diff) String() string {
	return fmt.Sprintf("%s: %s -> %s", d.Key, OrNone(d.Base), OrNone(d.Head))
}

// OrNone shows an empty value as "(none)": in messages, in tables and as
// the group of documents without a source.
func OrNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// FormatDiffs joins diffs for an error message.
func FormatDiffs(ds []Diff) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.String()
	}
	return strings.Join(parts, "; ")
}

type field struct {
	key    string
	judged bool
	get    func(h *Header) string
}

func itoa(n int) string { return strconv.Itoa(n) }

// fields lists every compared setting in a fixed order so output is stable.
var fields = []field{
	{"add_bos", true, func(h *Header) string { return strconv.FormatBool(h.Settings.AddBOS) }},
	{"bos_id", true, func(h *Header) string { return strconv.Itoa(int(h.Settings.BOSID)) }},
	{"window", true, func(h *Header) string { return itoa(h.Settings.Window) }},
	{"stride", true, func(h *Header) string { return itoa(h.Settings.Stride) }},
	{"dtype", true, func(h *Header) string { return h.Settings.Dtype }},
	{"dataset.revision", true, func(h *Header) string { return h.Dataset.Revision }},
	{"dataset.sha256", true, func(h *Header) string { return h.Dataset.SHA256 }},
	{"tokenizer_sha256", true, func(h *Header) string { return h.Settings.TokenizerSHA256 }},
	{"engine", true, func(h *Header) string { return h.Settings.Engine }},
	{"formulation", true, func(h *Header) string { return h.Settings.Formulation }},
	{"text_prep", true, func(h *Header) string { return h.Settings.TextPrep.String() }},
	{"bos_mode", false, func(h *Header) string { return h.Settings.BOSMode }},
	{"template", false, func(h *Header) string { return h.Settings.TemplateOf() }},
	// Shown when it differs, not judged: no template is applied.
	{"chat_template_sha256", false, func(h *Header) string { return h.Settings.ChatTemplateSHA256 }},
	{"dataset.name", false, func(h *Header) string { return h.Dataset.Name }},
	{"threads", false, func(h *Header) string { return itoa(h.Runtime.Threads) }},
	{"batch_size", false, func(h *Header) string { return itoa(h.Runtime.BatchSize) }},
	{"context", false, func(h *Header) string { return itoa(h.Runtime.Context) }},
	{"host", false, func(h *Header) string { return h.Runtime.Host }},
	{"gpu", false, func(h *Header) string { return h.Runtime.GPU }},
	{"cpu", false, func(h *Header) string { return h.Runtime.CPU }},
	// Paired comparison uses the ids both runs scored, so an exclusion on
	// one side narrows what is compared rather than changing a score.
	{"contamination", false, func(h *Header) string { return ContaminationKey(h.Contamination) }},
}

// JudgedKeys are the settings that change results, in display order.
func JudgedKeys() []string {
	var ks []string
	for _, f := range fields {
		if f.judged {
			ks = append(ks, f.key)
		}
	}
	return ks
}

// SettingsDiff lists every compared setting that differs, judged first.
func SettingsDiff(base, head Header) []Diff {
	var judged, shown []Diff
	for _, f := range fields {
		b, h := f.get(&base), f.get(&head)
		if b == h {
			continue
		}
		d := Diff{Key: f.key, Base: b, Head: h, Judged: f.judged}
		if f.judged {
			judged = append(judged, d)
		} else {
			shown = append(shown, d)
		}
	}
	return append(judged, shown...)
}

// Mismatch returns only the judged differences.
func Mismatch(base, head Header) []Diff {
	var out []Diff
	for _, d := range SettingsDiff(base, head) {
		if d.Judged {
			out = append(out, d)
		}
	}
	return out
}

// SameModel reports whether two headers name the same model: when they do
// not, a different tokenizer is expected and bits per byte still compare.
func SameModel(a, b Header) bool {
	if a.Model.Name != "" && b.Model.Name != "" {
		return a.Model.Name == b.Model.Name
	}
	return a.Model.SHA256 == b.Model.SHA256
}

// ResumeMismatch lists what must be equal for a resumed run to continue
// the same file: the test, the model file, the dataset and the judged
// settings, the sample and the shard.
func ResumeMismatch(stored, asked Header) []Diff {
	var out []Diff
	add := func(k, a, b string) {
		if a != b {
			out = append(out, Diff{Key: k, Base: a, Head: b, Judged: true})
		}
	}
	add("test", stored.Test, asked.Test)
	add("model.sha256", stored.Model.SHA256, asked.Model.SHA256)
	out = append(out, Mismatch(stored, asked)...)
	add("sample", sampleKey(stored.Sample), sampleKey(asked.Sample))
	add("shard", shardKey(stored.Shard), shardKey(asked.Shard))
	add("contamination", ContaminationKey(stored.Contamination), ContaminationKey(asked.Contamination))
	add("sequential", SequentialKey(stored.Sequential), SequentialKey(asked.Sequential))
	return out
}

// SequentialKey is what a resumed sequential run must keep: the rule, the
// order, the level, the minimum effect, the baseline and the set's size
// (the budget and where it stopped may change); "" for a fixed run.
func SequentialKey(s *Sequential) string {
	if s == nil {
		return ""
	}
	key := fmt.Sprintf("%s seed=%d level=%g min-effect=%g baseline=%s total=%d", s.Rule, s.Seed, s.Level, s.MinEffect, s.Baseline, s.Total)
	if s.Unit != "" {
		key += " unit=" + s.Unit
	}
	return key
}

func sampleKey(s *Sample) string {
	if s == nil {
		return ""
	}
	return fmt.Sprintf("n=%d seed=%d", s.N, s.Seed)
}

// ContaminationKey says in a few words what a scan found and what the run
// did with it: "3 of 2000 found, left out (scan 1a2b3c4d5e6f, 13-grams)";
// "" when no scan.
func ContaminationKey(c *Contamination) string {
	if c == nil {
		return ""
	}
	did := "scored"
	if c.Excluded {
		did = "left out"
	}
	return fmt.Sprintf("%d of %d found, %s (scan %s, %d-grams, above %g)", len(c.IDs), c.Checked, did, c.SHA256[:min(12, len(c.SHA256))], c.N, c.MinFraction)
}

func shardKey(s *Shard) string {
	if s == nil {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}
