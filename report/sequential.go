package report

import (
	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/compare/sequential"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// SequentialLine says, for a comparison whose head run was scored
// sequentially (--until decided), how much was scored, why it stopped and
// what the anytime-valid interval allows: "decided after 212 of 1,670
// documents (anytime-valid 95%): ...". Every surface shows this line; ""
// for a fixed-sample comparison.
func SequentialLine(c *compare.Comparison) string {
	s := c.Sequential
	if s == nil {
		return ""
	}
	noun := recordNoun(c, s.Total)
	if s.Unit == runfile.UnitSpan {
		noun = plural(s.Total, "span", "spans")
	}
	of := FormatCount(s.Scored) + " of " + noun
	if b := s.Cost.Phrase(); b != "" {
		of += ", " + b
	}
	level := "(anytime-valid " + fmtFloat(100*s.Level, 0) + "%)"
	var line string
	switch s.Reason {
	case sequential.Beyond:
		line = sprintf("decided after %s %s: %s, the whole set's delta is beyond ±%s", of, level, c.Verdict, fmtEffect(c.Metric, s.MinEffect))
	case sequential.Within:
		line = sprintf("decided after %s %s: no change larger than ±%s", of, level, fmtEffect(c.Metric, s.MinEffect))
	case sequential.Complete:
		line = sprintf("all %s scored: the interval is the whole set's exact delta", noun)
	default:
		why := "stopped before a decision"
		if s.Reason == sequential.Budget {
			why = "the budget"
			if s.Budget != "" {
				why += " (" + s.Budget + ")"
			}
			why += " ran out"
		}
		line = sprintf("undecided after %s, %s %s: ", of, why, level)
		if c.Verdict == compare.NoChange {
			line += "no change larger than ±" + fmtEffect(c.Metric, s.NoChangeLargerThan())
		} else {
			line += sprintf("%s, the whole set's delta is in %s", c.Verdict, FormatCI(c.Metric, s.CI))
		}
	}
	if s.LeftOut > 0 {
		line += sprintf("; %s scored past a gap in the order left out", FormatCount(s.LeftOut))
	}
	return line
}

// ReusedLine says, for a comparison whose head run scored nothing because
// its model was unchanged from a baseline's, whose records it reused:
// "unchanged model: records reused from run X, no scoring"; "" otherwise.
func ReusedLine(c *compare.Comparison) string {
	if r := c.HeadRun.Reused; r != nil {
		return r.Line()
	}
	return ""
}

// sequentialFooter explains anytime-valid intervals once, when a test of
// the report was scored sequentially; "" otherwise.
func sequentialFooter(tests []*compare.Comparison) string {
	for _, c := range tests {
		if c.Sequential != nil {
			return "Scored with --until decided: the interval is an anytime-valid confidence sequence for the whole set's delta " +
				"(valid at every record at once, so scoring stops once it lies beyond or within ±the minimum effect); " +
				"groups, p-values and movers are fixed-sample over the records scored."
		}
	}
	return ""
}
