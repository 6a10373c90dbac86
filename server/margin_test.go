package server_test

import (
	"bytes"
	"encoding/json"
	"html"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/compare/comparetest"
	"github.com/udgamlabs/udgam-ci/report"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

// The compare page and its JSON show the byte-normalised margin as the
// comment does: a row under accuracy, a column by type, the warning when
// it and accuracy disagree.
func TestCompareShowsMargin(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{CompareResamples: 500})
	bi, hi := comparetest.Disagreeing(140)
	c := uploadAndCompare(t, ts, "margin", bi, hi, nil)
	if c.Margin == nil || !c.Margin.Disagrees || c.ByGroup["add"].Margin == nil {
		t.Fatalf("compare JSON margin %+v, want a disagreeing margin overall and by type", c.Margin)
	}
	code, page := ts.get("/compare?base=margin-base&head=margin-head")
	if code != 200 {
		t.Fatalf("compare page: %d %s", code, page)
	}
	m := c.Margin
	for _, want := range []string{`id="margin"`, `id="margin-disagrees"`, "probe margin, nats per byte", "margin Δ",
		report.FormatScore(m.Metric, m.Base), report.FormatCI(m.Metric, m.CI), report.MarginDisagreement("Probe Suite", c.Result)} {
		if !strings.Contains(html.UnescapeString(page), want) {
			t.Errorf("compare page lacks %q", want)
		}
	}
}

// The run page says no template is applied and shows the chat template's
// hash the header records.
func TestRunPageShowsTemplate(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{})
	r := servertest.Spec{ID: "tmpl-1", Model: "acme/tmpl", Seed: 1, Records: 20}.Run()
	r.Header.Settings.ChatTemplateSHA256 = strings.Repeat("d", 64)
	var b bytes.Buffer
	if err := runfile.Encode(&b, r); err != nil {
		t.Fatal(err)
	}
	if code, _, body := ts.upload(b.Bytes(), ""); code != 201 {
		t.Fatalf("upload: %s", body)
	}
	code, page := ts.get("/runs/tmpl-1")
	if code != 200 || !strings.Contains(page, `<dd id="template">none <span class="muted">`) || !strings.Contains(page, strings.Repeat("d", 64)) {
		t.Errorf("run page %d lacks the template setting and chat template hash", code)
	}
}

// The compare page warns when a run's prompt-variant spread exceeds the
// gap between the runs, and lists each variant.
func TestCompareShowsVariantSpread(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{CompareResamples: 500})
	base := comparetest.SynthItems(300, 3, 0.5)
	head := comparetest.ShiftItems(base, 40)
	c := uploadAndCompare(t, ts, "var", base, head, func(items []runfile.Item) []runfile.Item {
		return append(comparetest.Variant(items, "reworded", 4), comparetest.Variant(items, "terse", 6)...)
	})
	if c.Variants == nil || !c.Variants.SpreadExceedsGap || c.Variants.Base == nil || len(c.Variants.Head.Variants) != 3 {
		t.Fatalf("compare JSON variants %+v: want both spreads, exceeding the gap", c.Variants)
	}
	_, page := ts.get("/compare?base=var-base&head=var-head")
	page = html.UnescapeString(page)
	for _, want := range []string{`id="variant-spread"`, report.VariantWarning(&c), `id="variants"`, "reworded", "terse", "range (max − min)"} {
		if !strings.Contains(page, want) {
			t.Errorf("compare page lacks %q", want)
		}
	}
	// The stored run keeps its variant records; its score is the published one.
	code, body, _ := ts.do("GET", "/api/v1/runs/var-head/records", "", nil)
	if code != 200 {
		t.Fatalf("records: %d", code)
	}
	r, err := runfile.Read(bytes.NewReader(body), "records")
	if err != nil || len(r.Variants) != 2*len(head) || len(r.Items) != len(head) {
		t.Errorf("stored run: %v, %d items and %d variant records, want %d and %d", err, len(r.Items), len(r.Variants), len(head), 2*len(head))
	}
}

// uploadAndCompare stores runs NAME-base and NAME-head of the given items
// (with the variant records variants makes, when not nil) and returns the
// server's comparison of them.
func uploadAndCompare(t *testing.T, ts *testServer, name string, base, head []runfile.Item, variants func([]runfile.Item) []runfile.Item) compare.Comparison {
	t.Helper()
	for i, items := range [][]runfile.Item{base, head} {
		r := servertest.Spec{ID: name + []string{"-base", "-head"}[i], Model: "acme/" + name, Seed: uint64(i + 1), Records: len(items)}.Run()
		r.Items = items
		if variants != nil {
			r.Variants = variants(items)
		}
		var b bytes.Buffer
		if err := runfile.Encode(&b, r); err != nil {
			t.Fatal(err)
		}
		if code, _, body := ts.upload(b.Bytes(), ""); code != 201 {
			t.Fatalf("upload %d: %s", i, body)
		}
	}
	code, body, _ := ts.do("GET", "/api/v1/compare?base="+name+"-base&head="+name+"-head", "", nil)
	if code != 200 {
		t.Fatalf("compare JSON: %d %s", code, body)
	}
	var c compare.Comparison
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatal(err)
	}
	return c
}
