package server_test

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/compare/comparetest"
	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

// cellsOf are the texts of the body cells of the table with id.
func cellsOf(t *testing.T, page, id string) [][]string {
	t.Helper()
	return rowsOf(t, page, `<table id="`+id+`"[^>]*>`)
}

// number reads a page's number ("+1.5", "[-2.0", "3.1%") for comparing
// with the summary's JSON value at the page's precision.
func number(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(strings.Trim(s, "[]%+ "), 64)
	if err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return v
}

// A probes run's page shows its own byte-normalised margin with its own
// interval, the margin by type, and each prompt variant's accuracy with
// the spread: the numbers of `score probes`' summary and its JSON
// (probes.Summarize and compare.ProbeStats of the same records).
func TestRunPageShowsMarginAndVariants(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{})
	items, _ := comparetest.Disagreeing(140)
	r := servertest.Spec{ID: "spread-1", Model: "acme/spread", Seed: 3, Records: len(items)}.Run()
	r.Items = items
	r.Variants = append(comparetest.Variant(items, "reworded", 3), comparetest.Variant(items, "terse", 5)...)
	var b bytes.Buffer
	if err := runfile.Encode(&b, r); err != nil {
		t.Fatal(err)
	}
	if code, _, body := ts.upload(b.Bytes(), ""); code != 201 {
		t.Fatalf("upload: %s", body)
	}
	sum := probes.Summarize(r.Header, r.Items, 0)
	var err error
	sum.MarginCI, sum.Variants, err = compare.ProbeStats(r)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Margin == nil || sum.MarginCI == nil || sum.Variants == nil || len(sum.Variants.Variants) != 3 {
		t.Fatalf("the fixture's summary lacks a margin or variants: %+v", sum)
	}
	var text strings.Builder
	if err := sum.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	code, page := ts.get("/runs/spread-1")
	if code != 200 {
		t.Fatalf("run page: %d %s", code, page)
	}
	page = html.UnescapeString(page)
	// The margin and its interval, as the summary's text writes them.
	margin := fmt.Sprintf("%.4f", *sum.Margin)
	interval := fmt.Sprintf("[%.4f, %.4f]", sum.MarginCI[0], sum.MarginCI[1])
	for _, want := range []string{`<strong data-key="margin">` + margin + `</strong>`, "95% interval " + interval} {
		if !strings.Contains(page, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	if !strings.Contains(text.String(), "margin "+margin+" nats per byte, 95% interval "+interval) {
		t.Errorf("the summary's text says otherwise:\n%s", text.String())
	}
	// The margin by type, in the by-type table.
	for _, row := range cellsOf(t, page, "groups") {
		if want := fmt.Sprintf("%.4f", sum.MarginByType[row[0]]); row[3] != want {
			t.Errorf("type %s: margin %q, want %s", row[0], row[3], want)
		}
	}
	// Each variant, then the range and the standard deviation.
	rows := cellsOf(t, page, "run-variants")
	vs := sum.Variants
	if len(rows) != len(vs.Variants)+2 {
		t.Fatalf("%d variant rows, want %d and the spread: %q", len(rows), len(vs.Variants), rows)
	}
	near := func(what, cell string, v float64) {
		if got := number(t, cell); math.Abs(got-v) > 0.05+1e-9 {
			t.Errorf("%s: page %q, summary %v", what, cell, v)
		}
	}
	for i, x := range vs.Variants {
		row := rows[i]
		if row[0] != x.Variant {
			t.Fatalf("row %d is %q, want %s", i, row[0], x.Variant)
		}
		near(x.Variant+" accuracy", row[1], x.Accuracy)
		if i > 0 {
			ci := strings.Split(row[3], ", ")
			near(x.Variant+" delta", row[2], x.Delta)
			near(x.Variant+" interval low", ci[0], x.CI[0])
			near(x.Variant+" interval high", ci[1], x.CI[1])
		}
	}
	near("range", rows[len(rows)-2][1], vs.Range)
	near("standard deviation", rows[len(rows)-1][1], vs.SD)
	if !strings.Contains(text.String(), fmt.Sprintf("range (max - min) %.1f points, standard deviation %.1f", vs.Range, vs.SD)) {
		t.Errorf("the summary's text says another spread:\n%s", text.String())
	}
	// A run scored without per-byte scores or variants shows neither.
	plain := servertest.Spec{ID: "plain-1", Model: "acme/spread", Seed: 4, Records: 40}
	if code, _, body := ts.upload(plain.Body(), ""); code != 201 {
		t.Fatal(body)
	}
	if _, page := ts.get("/runs/plain-1"); strings.Contains(page, `id="run-margin"`) || strings.Contains(page, `id="run-variants"`) {
		t.Error("a run without per-byte scores or variants shows a margin or variants")
	}
	// And a reader on a phone sees it whole.
	checkPhone(t, chromium(t), phoneProxy(t, ts.url), "/runs/spread-1", 4)
}
