package server

import (
	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// variantSide is one run's prompt-variant spread on the compare page.
type variantSide struct {
	Run string // "base" or "head"
	*runfile.Spread
}

// variantSides lists the runs that scored prompt variants, base first.
func variantSides(vc *compare.VariantComparison) []variantSide {
	var out []variantSide
	for _, s := range []variantSide{{"base", vc.Base}, {"head", vc.Head}} {
		if s.Spread != nil {
			out = append(out, s)
		}
	}
	return out
}
