package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/internal/numfmt"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Numbers are shown as people read them: bits per byte and its deltas to
// 4 decimals; accuracy and its deltas to 1 (percentage points). Every
// surface (terminal, comment, job summary, pages) formats through these.

// FormatScore writes a score as people read it: bpb and the margin to 4
// decimals, accuracy to 1.
func FormatScore(metric string, v float64) string {
	if metric == compare.MetricBPB || metric == compare.MetricMargin {
		return strconv.FormatFloat(v, 'f', 4, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// FormatDelta writes a signed difference: bpb to 4 decimals, accuracy
// points to 1.
func FormatDelta(metric string, v float64) string {
	if metric == compare.MetricBPB || metric == compare.MetricMargin {
		return fmtSigned(v, 4)
	}
	return fmtSigned(v, 1)
}

// FormatOutput writes a number as the Action's step outputs carry it, for
// scripts to read: no sign, no unit, bpb to 4 decimals, accuracy to 2.
func FormatOutput(metric string, v float64) string {
	prec := 2
	if metric == compare.MetricBPB {
		prec = 4
	}
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Trim(s, "-0.") == "" { // a change that rounds to zero has no sign
		s = strings.TrimPrefix(s, "-")
	}
	return s
}

// fmtSigned writes a change with its sign, and zero without one.
func fmtSigned(v float64, prec int) string {
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Trim(s, "-0.") == "" { // no "-0.0000" or "+0.0000"
		return strings.TrimPrefix(s, "-")
	}
	if v > 0 {
		return "+" + s
	}
	return s
}

// FormatCI writes an interval as "[lo, hi]" with signed ends.
func FormatCI(metric string, ci [2]float64) string {
	return "[" + FormatDelta(metric, ci[0]) + ", " + FormatDelta(metric, ci[1]) + "]"
}

// FormatP writes a p-value as a phrase: "p < 0.001", "p = 0.249".
func FormatP(p float64) string {
	if p < 0.001 {
		return "p < 0.001"
	}
	return "p = " + strconv.FormatFloat(p, 'f', 3, 64)
}

// FormatMinEffect writes a threshold as it was given: "0.002 bpb", "1.0 point".
func FormatMinEffect(metric string, v float64) string {
	if metric == compare.MetricBPB {
		return strconv.FormatFloat(v, 'f', -1, 64) + " bpb"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " point"
}

// fmtEffect is a size of change with its unit, such as "0.0021 bpb".
func fmtEffect(metric string, v float64) string {
	if metric == compare.MetricBPB {
		return strconv.FormatFloat(v, 'f', 4, 64) + " bpb"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " points"
}

// FormatCount writes a count with thousands commas: 1,670.
func FormatCount(n int) string { return numfmt.Count(n) }

func fmtPct(v float64) string { return FormatScore(compare.MetricAccuracy, v) }

func fmtFloat(v float64, prec int) string {
	if math.IsNaN(v) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// plural picks a noun form: 1 document, 2 documents.
func plural(n int, one, many string) string {
	if n == 1 {
		return FormatCount(n) + " " + one
	}
	return FormatCount(n) + " " + many
}

// isHubID tells a Hugging Face repository id (OWNER/NAME) from a file.
func isHubID(name string) bool {
	return runfile.IsHubRepo(name) && !strings.HasSuffix(strings.ToLower(name), ".gguf")
}

// shortRev shortens a full commit hash as git does; branch names stay.
func shortRev(rev string) string {
	if runfile.IsCommit(rev) {
		return rev[:7]
	}
	return rev
}

// modelLabel is "NAME@REV" with the revision shortened.
func modelLabel(name, rev string) string {
	if name == "" {
		name = "(unnamed model)"
	}
	if rev == "" {
		return name
	}
	return name + "@" + shortRev(rev)
}

// hubURL links a hub id at a revision; "" when name is not a hub id.
func hubURL(name, rev string) string {
	if !isHubID(name) {
		return ""
	}
	if rev == "" {
		return "https://huggingface.co/" + name
	}
	return "https://huggingface.co/" + name + "/tree/" + rev
}

// mdCell escapes text for a Markdown table cell.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// mdCode puts text in a code span that survives a table cell.
// Code is s as a Markdown code span, safe in a table cell and in text a
// pull request controls.
func Code(s string) string { return mdCode(s) }

func mdCode(s string) string {
	if s == "" {
		return ""
	}
	return "`" + strings.ReplaceAll(mdCell(s), "`", "'") + "`"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }
