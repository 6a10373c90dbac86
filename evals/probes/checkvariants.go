package probes

import (
	"fmt"
	"slices"
	"strings"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// CheckVariants refuses a run whose prompt-variant records disagree with
// what scoring a variant writes: a variant named in the record that is one
// of VariantNames besides the published (whose records carry none), an
// id "<item id>@<variant>" naming the same variant (runfile's Validate
// checks that), and the published
// record of the same item present with the same type, level, choices and
// answer (a variant rewords the question, nothing else). A published
// record's id never holds "@". Without it a relabelled variant could pass
// as another, or as the published template the headline is.
func CheckVariants(r *runfile.Run) error {
	published := make(map[string]*runfile.Item, len(r.Items))
	for i := range r.Items {
		it := &r.Items[i]
		if strings.Contains(it.ID, "@") {
			return fmt.Errorf("item %s: a published-template record whose id holds @, which marks a prompt variant's record (<item id>@<variant>, with its variant named)", it.ID)
		}
		published[it.ID] = it
	}
	names := VariantNames()[1:]
	for i := range r.Variants {
		v := &r.Variants[i]
		if !slices.Contains(names, v.Variant) {
			return fmt.Errorf("item %s: variant %q: want one of %s (the published template's records name none)", v.ID, v.Variant, strings.Join(names, ", "))
		}
		p, ok := published[v.ItemID()]
		switch {
		case !ok:
			return fmt.Errorf("item %s: variant %q of item %s, whose published record the run does not hold", v.ID, v.Variant, v.ItemID())
		case v.Type != p.Type || v.Level != p.Level || len(v.Logprobs) != len(p.Logprobs) || v.Answer != p.Answer:
			return fmt.Errorf("item %s: variant %q is %s/%d with %d choices, answer %d; its published item %s is %s/%d with %d choices, answer %d: a variant rewords the question only",
				v.ID, v.Variant, v.Type, v.Level, len(v.Logprobs), v.Answer, p.ID, p.Type, p.Level, len(p.Logprobs), p.Answer)
		}
	}
	return nil
}
