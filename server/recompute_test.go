package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

func runBody(t *testing.T, r *runfile.Run) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := runfile.Encode(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestSequentialRunsAreReplayed: the server recomputes where a sequential
// run stopped from its records and shows that; a header whose stop
// differs (or whose rule is gone) is refused or marked partial; a partial
// run is never a baseline, picked or requested; history and index mark it
// and show only its change paired with its baseline's same records
// (issue 39).
func TestSequentialRunsAreReplayed(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{CompareResamples: 200})
	day := func(d int) time.Time { return time.Date(2026, 11, d, 0, 0, 0, 0, time.UTC) }
	full := servertest.Spec{ID: "main-full", Test: runfile.TestFresh, Records: 400, Seed: 1, Started: day(1)}
	if code, _, body := ts.upload(full.Body(), ""); code != http.StatusCreated {
		t.Fatalf("baseline: %d %s", code, body)
	}
	seq, err := servertest.Sequential(full.Run(), servertest.Spec{ID: "main-seq", Test: runfile.TestFresh, Records: 400, Seed: 2, Started: day(2), Score: 0.5}, 50, 9, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	before := ts.state()
	for name, edit := range map[string]func(h *runfile.Header){
		"a complete stop claimed after 50": func(h *runfile.Header) {
			h.Sequential.Stop = &runfile.Stop{Reason: "complete", Scored: 400, CI: h.Sequential.Stop.CI}
		},
		"another order seed": func(h *runfile.Header) { h.Sequential.Seed++ },
		"another interval":   func(h *runfile.Header) { h.Sequential.Stop.CI[0] -= 0.1 },
		"an unstored baseline": func(h *runfile.Header) {
			h.Sequential.Baseline = "not-stored"
		},
	} {
		forged := *seq
		h := seq.Header
		q, st := *h.Sequential, *h.Sequential.Stop
		q.Stop, h.Sequential, h.ID = &st, &q, "forged"
		edit(&h)
		forged.Header = h
		if code, _, body := ts.upload(runBody(t, &forged), ""); code != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", name, code, body)
		}
	}
	if after := ts.state(); after != before {
		t.Fatalf("refused uploads changed the store: %s, was %s", after, before)
	}
	code, res, body := ts.upload(runBody(t, seq), "")
	if code != http.StatusCreated || res.BaselineID != "main-full" {
		t.Fatalf("sequential run: %d %s", code, body)
	}
	hidden := *seq
	hidden.Header.ID, hidden.Header.Sequential, hidden.Header.StartedAt = "main-hidden", nil, day(3)
	if code, _, body := ts.upload(runBody(t, &hidden), ""); code != http.StatusCreated {
		t.Fatalf("50 of 400 without its rule: %d %s", code, body)
	}
	if _, index := ts.get("/"); !strings.Contains(servertest.Between(index, "/runs/main-hidden", "</td>"), "50 of 400") {
		t.Errorf("index page's latest run, partial: %s", servertest.Between(index, `id="models"`, "</table>"))
	}
	for _, id := range []string{"main-seq", "main-hidden"} {
		code, _, body := ts.upload(servertest.Spec{ID: "asks-" + id, Test: runfile.TestFresh, Records: 400, Seed: 4, Ref: "pr", Started: day(4)}.Body(), "?baseline="+id)
		if code != http.StatusBadRequest || !strings.Contains(body, "partial") {
			t.Errorf("POST /runs?baseline=%s: %d %s, want refused as partial", id, code, body)
		}
	}
	code, res, body = ts.upload(servertest.Spec{ID: "main-next", Test: runfile.TestFresh, Records: 400, Seed: 5, Started: day(5)}.Body(), "")
	if code != http.StatusCreated || res.BaselineID != "main-full" {
		t.Fatalf("the next main run's baseline: %q (%d %s), want main-full", res.BaselineID, code, body)
	}
	ts.srv.WaitDeltas()

	// What the run cost is said beside where it stopped: the share of the
	// set's bytes its records hold.
	scored, all, tokens, allTokens := 0, 0, 0, 0
	for _, d := range seq.Docs {
		scored, tokens = scored+d.Bytes, tokens+d.Tokens
	}
	for _, d := range full.Run().Docs {
		all, allTokens = all+d.Bytes, allTokens+d.Tokens
	}
	share := fmt.Sprintf("%.1f%% of the set's bytes", 100*float64(scored)/float64(all))
	// The replay knows the set's tokens too: the baseline's, same tokenizer.
	replayed := share + fmt.Sprintf(", %.1f%% of its tokens", 100*float64(tokens)/float64(allTokens))
	got, err := ts.client.Run(context.Background(), "main-seq")
	if err != nil || got.Partial != "50 of 400, sequential, "+share || got.Stop == nil || got.Stop.Scored != 50 ||
		got.Cost == nil || got.Cost.Bytes != int64(scored) || got.Cost.TotalBytes != int64(all) || got.Cost.Tokens != int64(tokens) || got.Cost.TotalTokens != int64(allTokens) {
		t.Errorf("GET /api/v1/runs/main-seq: %v, partial %q, stop %+v, cost %+v; want %s", err, got.Partial, got.Stop, got.Cost, share)
	}
	_, page := ts.get("/runs/main-seq")
	if !strings.Contains(page, "stopped (") || !strings.Contains(page, "after 50 of 400 ("+html.EscapeString(replayed)+"), as this server replayed it") {
		t.Errorf("run page's sequential line: %s", servertest.Between(page, `id="sequential"`, "</dd>"))
	}
	_, hist := ts.get("/repos/" + testRepo + "/models/" + full.Run().Header.Model.Name)
	hist = servertest.Between(hist, `id="runs-fresh"`, "</table>")
	row := servertest.Between(hist, "/runs/main-seq", "</tr>")
	if !strings.Contains(row, "50 of 400, sequential, "+html.EscapeString(share)) || !strings.Contains(row, "paired") {
		t.Errorf("history row of the sequential run: %s", row)
	}
	if row := servertest.Between(hist, "/runs/main-hidden", "</tr>"); !strings.Contains(row, "50 of 400") || strings.Contains(row, "Δ") && !strings.Contains(row, "paired") {
		t.Errorf("history row of the run without its rule: %s", row)
	}
	// main-next's change is from the last whole main run, not a partial one.
	if row := servertest.Between(hist, "/runs/main-next", "</tr>"); !strings.Contains(row, "base=main-full&amp;head=main-next") {
		t.Errorf("history row after partial runs: %s", row)
	}
}

// TestReusedRunIsShown: a run whose model was unchanged from its
// baseline's, and which therefore holds the baseline's records unscored,
// says so on its page, in the API's header and on the comparison page.
func TestReusedRunIsShown(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{CompareResamples: 200})
	full := servertest.Spec{ID: "main-full", Test: runfile.TestFresh, Records: 120, Seed: 1}
	base := full.Run()
	base.Header.Model.Fingerprint = "f1"
	if code, _, body := ts.upload(runBody(t, base), ""); code != http.StatusCreated {
		t.Fatalf("baseline: %d %s", code, body)
	}
	reused := *base
	reused.Header.ID, reused.Header.Git.Ref = "pr-reused", "feature"
	reused.Header.StartedAt = base.Header.StartedAt.Add(time.Hour)
	reused.Header.Reused = &runfile.Reused{From: "main-full", Fingerprint: "f1"}
	if code, _, body := ts.upload(runBody(t, &reused), ""); code != http.StatusCreated {
		t.Fatalf("reused run: %d %s", code, body)
	}
	line := "unchanged model: records reused from run main-full, no scoring"
	got, err := ts.client.Run(context.Background(), "pr-reused")
	if err != nil || got.Header.Reused == nil || got.Header.Reused.From != "main-full" {
		t.Errorf("GET /api/v1/runs/pr-reused: %v, header reused %+v", err, got.Header.Reused)
	}
	if _, page := ts.get("/runs/pr-reused"); !strings.Contains(servertest.Between(page, `id="reused"`, "</dd>"), line) {
		t.Errorf("run page lacks %q", line)
	}
	if _, page := ts.get("/compare?base=main-full&head=pr-reused"); !strings.Contains(servertest.Between(page, `id="reused"`, "</div>"), line) {
		t.Errorf("compare page lacks %q:\n%s", line, page)
	}
	forged := reused
	forged.Header.ID, forged.Header.Reused = "forged", &runfile.Reused{From: "main-full", Fingerprint: "f2"}
	if code, _, body := ts.upload(runBody(t, &forged), ""); code != http.StatusBadRequest {
		t.Errorf("a reused run whose fingerprint is not its model's: %d %s, want 400", code, body)
	}
}

// TestVariantRecordsAreChecked: a probes run's prompt-variant records are
// stored only when the variant each names, its id's suffix and its
// published item agree; relabelled, unknown or orphaned variants are
// refused and change nothing (issue 39).
func TestVariantRecordsAreChecked(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{CompareResamples: 200})
	withTerse := func(id string) *runfile.Run {
		r := servertest.Spec{ID: id, Records: 70, Seed: 3}.Run()
		for _, it := range r.Items {
			v := it
			v.ID, v.Variant = runfile.VariantID(it.ID, "terse"), "terse"
			v.Logprobs = []float64{-9, -9, -9, -9}
			v.Pred = (it.Answer + 1) % len(v.Logprobs) // terse gets every item wrong
			v.Logprobs[v.Pred], v.Correct = -2, false
			r.Variants = append(r.Variants, v)
		}
		return r
	}
	before := ts.state()
	for name, edit := range map[string]func(r *runfile.Run){
		"terse records relabelled published": func(r *runfile.Run) {
			for i := range r.Variants {
				r.Variants[i].ID, r.Variants[i].Variant = runfile.VariantID(r.Items[i].ID, "published"), "published"
			}
		},
		"an unknown variant": func(r *runfile.Run) {
			r.Variants[0].ID, r.Variants[0].Variant = runfile.VariantID(r.Items[0].ID, "shouty"), "shouty"
		},
		"a published record with a variant's id": func(r *runfile.Run) { r.Items[3].ID += "@reworded" },
		"a variant with another answer":          func(r *runfile.Run) { r.Variants[5].Answer = 3 - r.Items[5].Answer },
		"a variant of an item not in the run":    func(r *runfile.Run) { r.Items = r.Items[1:] },
		"a published record's type changed":      func(r *runfile.Run) { r.Items[2].Type = "syllogism" },
	} {
		r := withTerse("forged")
		edit(r)
		for i := range r.Variants {
			r.Variants[i].Correct = r.Variants[i].Pred == r.Variants[i].Answer
		}
		if code, _, body := ts.upload(runBody(t, r), ""); code != http.StatusBadRequest || !strings.Contains(body, "variant") {
			t.Errorf("%s: %d %s, want 400 naming the variant", name, code, body)
		}
	}
	if after := ts.state(); after != before {
		t.Fatalf("refused uploads changed the store: %s, was %s", after, before)
	}
	if code, _, body := ts.upload(runBody(t, withTerse("honest")), ""); code != http.StatusCreated {
		t.Fatalf("honest variants: %d %s", code, body)
	}
}

// TestAuditNamesItsData: every surface of an audit names the data it
// scored, and says so when it was the smoke sample: the audit page, the
// run page beside it, the terminal table and the PR comment's section;
// each verdict is in words as well as an emoji (issue 39).
func TestAuditNamesItsData(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{})
	runs := seedCommit(t, ts, 6)
	_, files := auditOf(t, testRepo, 6)
	for _, r := range []*runfile.Run{files.ArtFresh, files.ArtProbes} {
		r.Header.Dataset.Smoke = true
	}
	rep := rejudged(t, files)
	up, err := ts.client.UploadAudit(context.Background(), auditUpload(t, rep, files))
	if err != nil {
		t.Fatal(err)
	}
	var text, md strings.Builder
	if err := audit.RenderText(&text, rep); err != nil {
		t.Fatal(err)
	}
	if err := audit.RenderMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	want := "Data scored: Fresh Text: the smoke sample, 40 of 1,670 documents, not the benchmark; Probe Suite: the smoke sample, 420 of 2,000 items, not the benchmark."
	_, auditPage := ts.get("/audits/" + up.ID)
	_, runPage := ts.get("/runs/" + runs[0])
	for name, surface := range map[string]string{"audit page": auditPage, "run page": runPage, "terminal": text.String(), "comment": md.String()} {
		if !strings.Contains(surface, want) {
			t.Errorf("%s does not name the data scored (%q):\n%s", name, want, surface)
		}
		if !strings.Contains(surface, "FAIL") {
			t.Errorf("%s: the verdict is not in words", name)
		}
	}
}

// rejudged is the report audit artifact writes for files.
func rejudged(t *testing.T, files audit.RunFiles) *audit.Report {
	t.Helper()
	rep, err := audit.Judge(files.RefFresh, files.ArtFresh, files.RefProbes, files.ArtProbes,
		audit.KL{Tokens: 12345, Mean: 0.0213, P99: 0.41, Max: 2.5, SameTop: 0.9612},
		audit.Options{Compare: compare.Options{Resamples: 500, Seed: 6}, Limits: audit.DefaultLimits, Quantized: "q4_0"})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestAuditsAreRecomputed: an audit is recomputed from its run files;
// numbers that are not what its runs give are refused, limits of the
// uploader's own make no verdict of the server's (shown as their claim),
// and a reference that scored otherwise than a stored run of the same
// model file and settings is refused (issue 39).
func TestAuditsAreRecomputed(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{})
	_, files := auditOf(t, testRepo, 8)
	for _, r := range []*runfile.Run{files.RefFresh, files.RefProbes} {
		r.Header.Model.SHA256 = "5ca1ab1e"
	}
	honest := rejudged(t, files)
	if honest.Verdict != audit.Fail {
		t.Fatalf("the synthetic artifact passes: %+v", honest.Reasons)
	}
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		json.Unmarshal(jsonOf(t, honest), &m)
		f(m)
		return jsonOf(t, m)
	}
	before := ts.state()
	for name, body := range map[string][]byte{
		"a delta of 0 between 5.08 and 5.63": edit(func(m map[string]any) { m["fresh"].(map[string]any)["delta"] = 0 }),
		"an interval [0.5, -0.5]":            edit(func(m map[string]any) { m["probes"].(map[string]any)["ci"] = []float64{0.5, -0.5} }),
		"n: -5":                              edit(func(m map[string]any) { m["fresh"].(map[string]any)["n"] = -5 }),
		"p_value: 7.5":                       edit(func(m map[string]any) { m["probes"].(map[string]any)["p_value"] = 7.5 }),
		"a reference of 0.5 bpb":             edit(func(m map[string]any) { m["fresh"].(map[string]any)["base"] = 0.5 }),
	} {
		ctype, b := multipartOf(t, auditUpload(t, body, files))
		if code, out, _ := ts.do(http.MethodPost, "/api/v1/audits", ts.token, bytes.NewReader(b), "Content-Type", ctype); code != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", name, code, out)
		}
	}
	if after := ts.state(); after != before {
		t.Fatalf("refused audits changed the store: %s, was %s", after, before)
	}

	// Honest numbers turned into a pass by the uploader's own limits.
	lenient := edit(func(m map[string]any) {
		m["limits"] = map[string]any{"bpb": 5, "accuracy": 100}
		m["verdict"] = "pass"
		delete(m, "reasons")
	})
	up, err := ts.client.UploadAudit(context.Background(), auditUpload(t, lenient, files))
	if err != nil {
		t.Fatal(err)
	}
	if up.Verdict != "fail" {
		t.Errorf("an audit judged under the uploader's limits bpb=5, accuracy=100: the server's verdict %q, want fail", up.Verdict)
	}
	_, page := ts.get("/audits/" + up.ID)
	if !strings.Contains(page, "❌ FAIL:") || !strings.Contains(page, "The uploader&#39;s claim, not this server&#39;s verdict: under their own limits (bits per byte &#43;5, accuracy −100 points) they judged it PASS.") ||
		!strings.Contains(page, `data-key="kl-claim"`) {
		t.Errorf("audit page of a lenient upload:\n%s", servertest.Between(page, `<section class="card audit"`, "</section>"))
	}

	// A stored run of the same model file and settings that scored the
	// reference's items otherwise.
	stored := *files.RefProbes
	stored.Header.ID = "stored-reference"
	stored.Items = append([]runfile.Item(nil), stored.Items...)
	it := &stored.Items[0]
	it.Logprobs = append([]float64(nil), it.Logprobs...)
	other := (it.Pred + 1) % len(it.Logprobs)
	it.Logprobs[it.Pred], it.Logprobs[other] = it.Logprobs[other], it.Logprobs[it.Pred]
	it.Pred, it.Correct = other, other == it.Answer
	if code, _, body := ts.upload(runBody(t, &stored), ""); code != http.StatusCreated {
		t.Fatalf("stored reference run: %d %s", code, body)
	}
	again := edit(func(m map[string]any) { m["kl"].(map[string]any)["tokens"] = 12346 }) // another audit of the same runs
	ctype, b := multipartOf(t, auditUpload(t, again, files))
	if code, out, _ := ts.do(http.MethodPost, "/api/v1/audits", ts.token, bytes.NewReader(b), "Content-Type", ctype); code != http.StatusBadRequest || !strings.Contains(string(out), "stored run stored-reference") {
		t.Errorf("a reference that differs from a stored run of its model file: %d %s, want 400", code, out)
	}
}

// TestUploadPlacesAreShared: two tokens holding slow uploads cannot take
// every upload place: a third token's upload is stored at once instead of
// waiting out their bodies and getting 503 (issue 39).
func TestUploadPlacesAreShared(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{MaxUploads: 4, MaxUploadsPerToken: 2, UploadWait: 20 * time.Second})
	ctx := context.Background()
	var tokens []string
	for range 3 {
		tok, _, err := ts.st.CreateToken(ctx, testRepo)
		if err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, tok)
	}
	var finish []func() int
	for i, tok := range []string{tokens[0], tokens[0], tokens[1], tokens[1]} {
		finish = append(finish, ts.heldUpload(tok, servertest.Spec{ID: fmt.Sprintf("slow-%d", i), Seed: uint64(10 + i), Records: 30}.Body()))
	}
	start := time.Now()
	code, body, _ := ts.do(http.MethodPost, "/api/v1/runs", tokens[2], bytes.NewReader(servertest.Spec{ID: "third", Seed: 20, Records: 30}.Body()))
	if code != http.StatusCreated || time.Since(start) > 10*time.Second {
		t.Errorf("a third token's upload beside two tokens' four slow ones: %d after %s: %s", code, time.Since(start).Round(time.Millisecond), body)
	}
	for i, f := range finish {
		if code := f(); code != http.StatusCreated {
			t.Errorf("slow upload %d: %d", i, code)
		}
	}
}

// TestChromiumAuditAndVariantsAtPhoneWidth: at 390 px the audit page
// shows the verdict (in words) and its title on the first screen, and the
// compare page of two runs with prompt variants lays its variants table
// out as cards, nothing cut off, its gap in points (issue 39).
func TestChromiumAuditAndVariantsAtPhoneWidth(t *testing.T) {
	t.Parallel()
	bin := chromium(t)
	ts := startServer(t, server.Config{CompareResamples: 200})
	seedCommit(t, ts, 9)
	rep, files := auditOf(t, testRepo, 9)
	up, err := ts.client.UploadAudit(context.Background(), auditUpload(t, rep, files))
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"var-base", "var-head"} {
		r := servertest.Spec{ID: id, Records: 140, Seed: uint64(30 + i)}.Run()
		for _, it := range r.Items {
			for k, name := range []string{"reworded", "terse"} {
				v := it
				v.ID, v.Variant = runfile.VariantID(it.ID, name), name
				v.Logprobs = []float64{-9, -9, -9, -9}
				v.Pred = (it.Answer + k + i) % 4
				v.Logprobs[v.Pred], v.Correct = -2, v.Pred == v.Answer
				r.Variants = append(r.Variants, v)
			}
		}
		if code, _, body := ts.upload(runBody(t, r), ""); code != http.StatusCreated {
			t.Fatalf("%s: %d %s", id, code, body)
		}
	}
	cmp := "/compare?base=var-base&head=var-head"
	_, page := ts.get(cmp)
	if gap := servertest.Between(page, `data-key="variant-gap">`, "</span>"); !strings.HasSuffix(gap, " points") {
		t.Errorf("the variants' gap %q, want points", gap)
	}
	if !strings.Contains(page, `<table id="variants" class="cards">`) {
		t.Errorf("the variants table is not laid out as cards at phone width")
	}
	// checkPhone fails for a data-first value below the first screen.
	if _, audit := ts.get("/audits/" + up.ID); !strings.Contains(audit, `data-key="audit-verdict" data-first`) || !strings.Contains(audit, `data-key="audit-title" data-first`) {
		t.Errorf("the audit page does not ask for its verdict and title first")
	}
	proxy := phoneProxy(t, ts.url)
	checkPhone(t, bin, proxy, "/audits/"+up.ID, 4)
	checkPhone(t, bin, proxy, cmp, 4)
}

// TestAuditLimitsAreTheServers: the verdict an audit page shows is judged
// under the server's limits (serve --audit-max-degradation); the
// uploader's, stricter here, are shown as their claim (issue 39).
func TestAuditLimitsAreTheServers(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{AuditLimits: &audit.Limits{BPB: 5, Accuracy: 100}})
	rep, files := auditOf(t, testRepo, 10)
	up, err := ts.client.UploadAudit(context.Background(), auditUpload(t, rep, files))
	if err != nil {
		t.Fatal(err)
	}
	_, page := ts.get("/audits/" + up.ID)
	if up.Verdict != "pass" || !strings.Contains(page, "✅ pass:") || !strings.Contains(page, "(bits per byte &#43;0.01, accuracy −2 points) they judged it FAIL.") {
		t.Errorf("an upload judged FAIL under the defaults, on a server of lenient limits: %s\n%s", up.Verdict, servertest.Between(page, `<section class="card audit"`, "</section>"))
	}
}
