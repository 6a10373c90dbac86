package report

import "github.com/udgamlabs/udgam-ci/compare"

// What the report server's compare page shows beside the comment, made by
// the same code as the comment so both say the same (plain text; the page
// escapes it).

// DataLine names the head run's test data and count, with the smoke
// sample's warning when it is one.
func DataLine(c *compare.Comparison) string { return dataLine(c, style{}) }

// SmokeWarning is what marks a run of the embedded smoke sample.
const SmokeWarning = smokeWarning

// ConstantWarning names the probe types on which the head does not beat
// always giving the same answer; "" when there are none.
func ConstantWarning(c *compare.Comparison) string { return constantWarning(c, style{}) }

// Floors are a probe type's chance and best-constant accuracies as the
// comment's columns show them ("" where unknown), and whether the head
// fails to beat the constant answer there.
func Floors(c *compare.Comparison, typ string) (chance, constant string, below bool) {
	r := c.ByGroup[typ]
	return fmtFloor(c.HeadRun.Chance, typ), fmtFloor(c.HeadRun.Constant, typ), r != nil && !beatsConstant(c, typ, r)
}
