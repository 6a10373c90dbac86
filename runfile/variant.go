package runfile

import "strings"

// VariantPublished names the published template among the prompt
// variants of the Probe Suite; its records carry no variant.
const VariantPublished = "published"

// VariantID is the record id of item id scored with prompt variant v.
func VariantID(id, v string) string { return id + "@" + v }

// ItemID is the id of the item a record scored, without its variant.
func (it *Item) ItemID() string {
	if it.Variant == "" {
		return it.ID
	}
	return strings.TrimSuffix(it.ID, "@"+it.Variant)
}

// VariantScore is one prompt variant's accuracy on the items scored in
// every variant, and its paired difference from the published template.
type VariantScore struct {
	Variant  string  `json:"variant"`
	Accuracy float64 `json:"accuracy"` // percent
	// Delta is Accuracy minus the published template's on the same items,
	// in points; CI its paired bootstrap interval (zero for the published).
	Delta float64    `json:"delta"`
	CI    [2]float64 `json:"ci"`
}

// Spread is how much one run's accuracy moves with the wording of the
// prompts: each variant's accuracy on the items every variant scored, the
// range (max − min) and the standard deviation across variants (n−1 in
// the denominator), in points. compare.RunSpread computes it; it is
// defined here so that the scorers' summaries carry it without depending
// on the comparison.
type Spread struct {
	Variants []VariantScore `json:"variants"` // the published first
	Items    int            `json:"items"`    // items scored in every variant
	Range    float64        `json:"range"`
	SD       float64        `json:"sd"`
}
