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
	for i, items := range [][]runfile.Item{bi, hi} {
		r := servertest.Spec{ID: []string{"margin-base", "margin-head"}[i], Model: "acme/margin", Seed: uint64(i + 1), Records: len(items)}.Run()
		r.Items = items
		var b bytes.Buffer
		if err := runfile.Encode(&b, r); err != nil {
			t.Fatal(err)
		}
		if code, _, body := ts.upload(b.Bytes(), ""); code != 201 {
			t.Fatalf("upload %d: %s", i, body)
		}
	}
	code, body, _ := ts.do("GET", "/api/v1/compare?base=margin-base&head=margin-head", "", nil)
	if code != 200 {
		t.Fatalf("compare JSON: %d %s", code, body)
	}
	var c compare.Comparison
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatal(err)
	}
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
