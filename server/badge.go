package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/report"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// The badge and the embeddable chart are images a README shows: they are
// served without a token, so on a private server every one is "not found".
const (
	badgePrefix = "/badge"
	chartPrefix = "/chart"
	// embedMaxAge is how long a README's image proxy may keep an image.
	embedMaxAge = "public, max-age=300"
)

// errNoEmbed is the one answer for a model a badge or chart cannot show:
// unknown, without a run on the base branch, or on a private server. The
// same words for all, so the answer tells nothing of what is stored.
var errNoEmbed = echo.NewHTTPError(http.StatusNotFound, "no such image: a badge or chart needs a public server and a model with runs on its base branch")

// Badge colours by verdict: white text on each reads at WCAG AA.
var badgeColours = map[compare.Verdict]string{
	compare.Improved:  "#1a7f37",
	compare.Regressed: "#cf222e",
	compare.NoChange:  "#0969da",
	"":                "#57606a", // no change measured yet
}

// embedTarget reads /badge|/chart + /repos/OWNER/NAME/models/MODEL/TEST.svg.
// On a private server it answers before reading anything, so a private
// model and an unknown one take the same path and the same work.
func (s *Server) embedTarget(c echo.Context, prefix string) (modelRef, string, error) {
	if s.cfg.Private {
		return modelRef{}, "", errNoEmbed
	}
	rest := strings.TrimPrefix(c.Request().URL.Path, prefix)
	i := strings.LastIndexByte(rest, '/')
	test, ok := strings.CutSuffix(rest[i+1:], ".svg")
	if i < 0 || !ok || store.ValidTest(test) != nil {
		return modelRef{}, "", errNoEmbed
	}
	ref, err := s.modelOf(c, rest[:i], "")
	if err != nil {
		return modelRef{}, "", errNoEmbed
	}
	return ref, test, nil
}

// badge is GET /badge/repos/OWNER/NAME/models/MODEL/TEST.svg: the latest
// whole run on the base branch, its change since the model's anchor or
// else its baseline (as stored after upload) coloured by that change's
// verdict, and what data it scored.
func (s *Server) badge(c echo.Context) error {
	ref, test, err := s.embedTarget(c, badgePrefix)
	if err != nil {
		return err
	}
	r, err := s.store.Baseline(c.Request().Context(), ref.Repo, ref.Model, s.cfg.BaseRef, test)
	if errors.Is(err, store.ErrNotFound) {
		return errNoEmbed
	}
	if err != nil {
		return err
	}
	var since *anchorSince
	a, ds, err := s.store.AnchorDeltas(c.Request().Context(), ref.Repo, ref.Model, test)
	switch {
	case errors.Is(err, store.ErrNotFound): // no anchor: the change since the baseline
	case err != nil:
		return err
	default:
		if d, ok := ds[r.ID]; ok {
			since = &anchorSince{Anchor: a, Delta: d}
		}
	}
	return s.serveSVG(c, renderBadge(badgeOf(r, s.cfg.BaseRef, since)))
}

// anchorSince is a run's change since its model's anchor.
type anchorSince struct {
	store.Anchor
	Delta store.AnchorDelta
}

// badgeSpec is what a badge says.
type badgeSpec struct {
	Label, Value, Title string
	Verdict             compare.Verdict // "" when no change was measured
}

// badgeOf says what a badge shows of r: its change since the model's
// anchor where one is stored (judged against the anchor's drift budget
// when it has one), else its change since its baseline.
func badgeOf(r *store.Run, baseRef string, since *anchorSince) badgeSpec {
	data := r.Header.Dataset.Name
	switch {
	case r.Header.Dataset.Smoke:
		data = "smoke sample"
	case data == "":
		data = "benchmark set"
	}
	name := "probes"
	if r.Test == runfile.TestFresh {
		name = "fresh text"
	}
	m := r.Score.Metric
	b := badgeSpec{Label: clip(name+" · "+data, 40), Value: fmtScore(m, r.Score.Value)}
	if m == compare.MetricBPB {
		b.Value += " bpb"
	}
	b.Title = fmt.Sprintf("%s (%s) on %s, run %s: %s %s, %s", r.Model, r.Repo, baseRef, r.ID, b.Value, fmtInterval(r.Score), metricName(m))
	change := func(delta float64) string {
		if m == compare.MetricAccuracy {
			return report.FormatDelta(m, delta) + " pts" // a difference of percentages is in points
		}
		return report.FormatDelta(m, delta)
	}
	switch {
	case since != nil:
		d := since.Delta
		ci, minEffect, budget := [2]float64{d.Lo, d.Hi}, compare.DefaultMinEffect(r.Test), "no drift budget"
		if a := since.MaxDrift; a != nil && *a > 0 {
			minEffect, budget = *a, "drift budget "+report.FormatScore(m, *a)
		}
		b.Verdict = compare.Judge(m, d.Delta, ci, minEffect)
		b.Value += " " + change(d.Delta) + " since anchor"
		b.Title += fmt.Sprintf("; since the anchor, run %s: %s %s, %s (%s)", d.AnchorID, report.FormatDelta(m, d.Delta), report.FormatCI(m, ci), b.Verdict, budget)
	case r.DeltaBase != "" && r.DeltaBase == r.BaselineID:
		ci := [2]float64{r.DeltaLo, r.DeltaHi}
		b.Verdict = compare.Judge(m, r.Delta, ci, compare.DefaultMinEffect(r.Test))
		b.Value += " " + change(r.Delta)
		b.Title += fmt.Sprintf("; since run %s: %s %s, %s", r.DeltaBase, report.FormatDelta(m, r.Delta), report.FormatCI(m, ci), b.Verdict)
	}
	return b
}

// clip shortens s to at most n runes, marking the cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// textWidth estimates s at 11 px in a sans-serif font; textLength then
// makes every font fill exactly that width, so nothing overflows.
func textWidth(s string) float64 {
	w := 0.0
	for _, r := range s {
		switch {
		case strings.ContainsRune("il.,:;'|!· ", r):
			w += 3.5
		case r >= 'A' && r <= 'Z', r == 'm', r == 'w', r == '%':
			w += 8.5
		default:
			w += 6.8
		}
	}
	return math.Ceil(w)
}

// renderBadge draws a flat 20 px badge: the label on grey, the value on
// the verdict's colour; its title says everything in words.
func renderBadge(b badgeSpec) string {
	const pad = 6.0
	esc := template.HTMLEscapeString
	lt, vt := textWidth(b.Label), textWidth(b.Value)
	lw, vw := lt+2*pad, vt+2*pad
	w := lw + vw
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="20" viewBox="0 0 %g 20" role="img" aria-label="%s: %s">`,
		w, w, esc(b.Label), esc(b.Value))
	fmt.Fprintf(&sb, `<title>%s</title>`, esc(b.Title))
	fmt.Fprintf(&sb, `<clipPath id="r"><rect width="%g" height="20" rx="3"/></clipPath>`, w)
	fmt.Fprintf(&sb, `<g clip-path="url(#r)"><rect width="%g" height="20" fill="#555"/><rect x="%g" width="%g" height="20" fill="%s"/></g>`,
		lw, lw, vw, badgeColours[b.Verdict])
	sb.WriteString(`<g fill="#fff" text-anchor="middle" font-family="Verdana, DejaVu Sans, sans-serif" font-size="11">`)
	fmt.Fprintf(&sb, `<text x="%g" y="14" textLength="%g" lengthAdjust="spacingAndGlyphs">%s</text>`, lw/2, lt, esc(b.Label))
	fmt.Fprintf(&sb, `<text x="%g" y="14" textLength="%g" lengthAdjust="spacingAndGlyphs">%s</text>`, lw+vw/2, vt, esc(b.Value))
	sb.WriteString(`</g></svg>`)
	return sb.String()
}

// chartSVG is GET /chart/repos/OWNER/NAME/models/MODEL/TEST.svg: the
// history page's chart of that test, drawn by the same code from the same
// runs, as an image with a size of its own.
func (s *Server) chartSVG(c echo.Context) error {
	ref, test, err := s.embedTarget(c, chartPrefix)
	if err != nil {
		return err
	}
	f, err := filterOf(c)
	if err != nil {
		return err
	}
	f.Test = test
	p, err := s.history(c, ref, f)
	var he *echo.HTTPError
	if errors.As(err, &he) && he.Code == http.StatusNotFound || errors.Is(err, store.ErrNotFound) {
		return errNoEmbed
	}
	if err != nil {
		return err
	}
	for _, sec := range p.Sections {
		if sec.Test == test {
			return s.serveSVG(c, standalone(string(sec.Chart)))
		}
	}
	return errNoEmbed
}

// standalone gives the page's inline chart the size an <img> needs; the
// page's CSS sizes the inline one.
func standalone(svg string) string {
	return strings.Replace(svg, `<svg class="chart" `, fmt.Sprintf(`<svg class="chart" width="%g" height="%g" `, chartW, chartH), 1)
}

// serveSVG answers an image with cache headers and an ETag, and 304 to a
// proxy that already holds it.
func (s *Server) serveSVG(c echo.Context, svg string) error {
	sum := sha256.Sum256([]byte(svg))
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	h := c.Response().Header()
	h.Set("Cache-Control", embedMaxAge)
	h.Set("ETag", etag)
	if c.Request().Header.Get("If-None-Match") == etag {
		return c.NoContent(http.StatusNotModified)
	}
	return c.Blob(http.StatusOK, "image/svg+xml; charset=utf-8", []byte(svg))
}
