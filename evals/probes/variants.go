package probes

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// Prompt variants: the published template is one draw of how a question
// can be worded. Each type (core and frontier) has two fixed rewordings besides it, made
// from the published item itself (same numbers, answer and choices in the
// same order), so a variant item pairs with its published item by id and
// the answer is still scored as " " + choice after the prompt:
//
//	published  Question: What is 32 + 13?\nAnswer:
//	reworded   Question: Add 32 and 13. What is the sum?\nAnswer:
//	terse      Q: 32 + 13 = ?\nA:
//
// A variant's record is keyed "<item id>@<variant>" and carries the
// variant's name in its `variant` field; the published records keep their
// ids and have none, so the headline is the published score, unchanged.

// Variant names. VariantPublished is the published template itself.
const (
	VariantPublished = runfile.VariantPublished
	VariantReworded  = "reworded"
	VariantTerse     = "terse"
	// VariantsAll asks for every variant (--variants all).
	VariantsAll = "all"
)

// VariantNames lists the variants in report order, the published first.
func VariantNames() []string { return []string{VariantPublished, VariantReworded, VariantTerse} }

// rewording turns a published question into the two variants' texts; the
// pattern must match every published question of its type.
type rewording struct {
	pattern         *regexp.Regexp
	reworded, terse string // regexp.Expand templates
}

var rewordings = map[string]rewording{
	"add":          {regexp.MustCompile(`^What is (.+) \+ (.+)\?$`), "Add $1 and $2. What is the sum?", "$1 + $2 = ?"},
	"mul":          {regexp.MustCompile(`^What is (.+) × (.+)\?$`), "Multiply $1 by $2. What is the product?", "$1 × $2 = ?"},
	"units":        {regexp.MustCompile(`^How many (.+) are in (\S+) (.+)\?$`), "Convert $2 $3 to $1.", "$2 $3 in $1 = ?"},
	"sequence":     {regexp.MustCompile(`^What number comes next: (.+), \?$`), "Find the next number in the sequence $1.", "$1, ?"},
	"word_problem": {regexp.MustCompile(`^(.+)$`), "Solve this word problem. $1", "$1"},
	"compare":      {regexp.MustCompile(`^Which number is larger, (.+) or (.+)\?$`), "Of $1 and $2, which number is larger?", "Larger: $1 or $2?"},
	"syllogism":    {regexp.MustCompile(`^(.+) Is every (.+) a (.+)\? Answer Yes or No\.$`), "Suppose: $1 Does it follow that every $2 is a $3? Answer Yes or No.", "$1 Every $2 is a $3? Yes or No."},
	// The frontier types: the answer is still a weekday or a name.
	"weekday":  {regexp.MustCompile(`^If today is (\S+), what day will it be in (\S+) days\?$`), "Today is $1. Which day of the week is it $2 days from now?", "$1 + $2 days = ?"},
	"ordering": {regexp.MustCompile(`^(.+) Who is the (\S+)\?$`), "Read these facts: $1 Which person is the $2?", "$1 The $2: ?"},
}

// frames wrap a variant's question text.
var frames = map[string][2]string{
	VariantReworded: {"Question: ", "\nAnswer:"},
	VariantTerse:    {"Q: ", "\nA:"},
}

// ParseVariants reads --variants: "" for none, "all", or a comma list of
// names; the published template is always scored and never listed.
func ParseVariants(s string) ([]string, error) {
	switch s {
	case "":
		return nil, nil
	case VariantsAll:
		return VariantNames()[1:], nil
	}
	var out []string
	for _, v := range strings.Split(s, ",") {
		v = strings.TrimSpace(v)
		switch {
		case v == VariantPublished:
			continue
		case frames[v] == [2]string{}:
			return nil, fmt.Errorf("--variants %q: unknown variant %q; want all or some of %s", s, v, strings.Join(VariantNames()[1:], ", "))
		case !slices.Contains(out, v):
			out = append(out, v)
		}
	}
	return out, nil
}

// VariantItems makes each item's variants named in names, item by item in
// the order given. An item whose type has no rewordings, or whose prompt
// is not in the published form, is an error naming it.
func VariantItems(items []Item, names []string) ([]Item, error) {
	if len(names) == 0 {
		return nil, nil
	}
	var out []Item
	for i := range items {
		it := &items[i]
		rw, ok := rewordings[it.Type]
		if !ok {
			return nil, fmt.Errorf("item %s: type %s has no prompt variants (the generated types have)", it.ID, it.Type)
		}
		q, ok := strings.CutPrefix(it.Prompt, "Question: ")
		if ok {
			q, ok = strings.CutSuffix(q, "\nAnswer:")
		}
		m := rw.pattern.FindStringSubmatchIndex(q)
		if !ok || m == nil {
			return nil, fmt.Errorf("item %s: prompt %q is not in the published %s form, so it has no variants", it.ID, it.Prompt, it.Type)
		}
		for _, v := range names {
			tmpl := rw.reworded
			if v == VariantTerse {
				tmpl = rw.terse
			}
			f := frames[v]
			text := string(rw.pattern.ExpandString(nil, tmpl, q, m))
			vi := *it
			vi.ID, vi.Variant, vi.Prompt = runfile.VariantID(it.ID, v), v, f[0]+text+f[1]
			vi.Choices = slices.Clone(it.Choices)
			out = append(out, vi)
		}
	}
	return out, nil
}
