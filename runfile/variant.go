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
