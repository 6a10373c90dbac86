package server_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"html"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/evals/audit/audittest"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

// processCPU is the CPU time this process has used, server and client
// alike: the tests that read it are not parallel, so it is theirs.
func processCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Skipf("no CPU time here: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestAuditReportWhitespaceCostsLinearCPU: whitespace after a report's
// JSON costs the server CPU in proportion to its length, and a report
// part over 1 MiB is refused on its own, however small the upload on the
// wire: 8 MiB of spaces, gzipped, once cost seconds of CPU (issue 50).
func TestAuditReportWhitespaceCostsLinearCPU(t *testing.T) {
	// Not parallel: it reads the process's CPU time.
	ts := startServer(t, server.Config{})
	rep, files := auditOf(t, testRepo, 5)
	good := jsonOf(t, rep)
	post := func(report []byte) (int, []byte, time.Duration) {
		ctype, body := multipartOf(t, auditUpload(t, report, files))
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write(body)
		zw.Close()
		start := processCPU(t)
		code, b, _ := ts.do(http.MethodPost, "/api/v1/audits", ts.token, bytes.NewReader(z.Bytes()), "Content-Type", ctype, "Content-Encoding", "gzip")
		return code, b, processCPU(t) - start
	}
	if code, b, _ := post(good); code != http.StatusCreated {
		t.Fatalf("the report: %d %s", code, b)
	}
	code, b, base := post(good) // stored already: the same work, 200
	if code != http.StatusOK {
		t.Fatalf("the report again: %d %s", code, b)
	}
	pad := func(n int) []byte { return append(append([]byte{}, good...), bytes.Repeat([]byte(" "), n)...) }
	within := pad(audit.MaxReportBytes - len(good))
	if code, b, cpu := post(within); code != http.StatusOK || cpu > 3*base+200*time.Millisecond {
		t.Errorf("the report followed by %d spaces, 1 MiB in all: %d after %s of CPU (%s without them): %s", len(within)-len(good), code, cpu, base, b)
	}
	code, b, cpu := post(pad(8 << 20))
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(errorOf(t, b), "over the limit of 1048576 bytes for a report") || cpu > 3*base+200*time.Millisecond {
		t.Errorf("the report followed by 8 MiB of spaces: %d after %s of CPU (%s without them): %s; want 413, the report's own limit", code, cpu, base, b)
	}
}

// TestAuditReportReadStrictly: a report is read as strictly as a run
// file: a key repeated, or in another case than its field's, is refused
// naming the key, where encoding/json read it case-blind, the last of
// two winning (issue 50).
func TestAuditReportReadStrictly(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{})
	rep, files := auditOf(t, testRepo, 5)
	good := string(jsonOf(t, rep))
	before := ts.state()
	for _, tc := range []struct{ name, old, new, want string }{
		{"the verdict in upper case", `"verdict":"fail"`, `"VERDICT":"fail"`, `key "VERDICT": the field is "verdict" (keys are case-sensitive)`},
		{"the verdict twice", `"verdict":"fail"`, `"verdict":"fail","verdict":"fail"`, `key "verdict" appears twice`},
		{"the verdict again in upper case", `"verdict":"fail"`, `"verdict":"fail","Verdict":"fail"`, `key "Verdict": the field is "verdict"`},
		{"a nested key in another case", `"same_top":`, `"Same_Top":`, `key "kl.Same_Top": the field is "kl.same_top"`},
		{"kl spelled with a Kelvin sign", `"kl":`, `"\u212al":`, "the field is \"kl\""},
		{"a verification claimed by the uploader", `"verdict":"fail"`, `"verdict":"fail","verified":["artifact-fresh.jsonl"]`, "set by a report server, never by an upload"},
		{"bytes that are not UTF-8", `"verdict":"fail"`, "\"verdict\":\"fail\",\"quantized\":\"q4\xff\"", "not valid UTF-8"},
	} {
		body := strings.Replace(good, tc.old, tc.new, 1)
		if body == good {
			t.Fatalf("%s: %s is not in the report", tc.name, tc.old)
		}
		ctype, b := multipartOf(t, auditUpload(t, []byte(body), files))
		code, out, _ := ts.do(http.MethodPost, "/api/v1/audits", ts.token, bytes.NewReader(b), "Content-Type", ctype)
		if code != http.StatusBadRequest || !strings.Contains(errorOf(t, out), tc.want) {
			t.Errorf("%s: %d %s, want 400 naming %q", tc.name, code, out, tc.want)
		}
	}
	if after := ts.state(); after != before {
		t.Errorf("refused reports changed the store: %s, was %s", after, before)
	}
}

// TestPartialRunPageSaysPartial: a run of 50 documents of a 400-document
// set (what --limit 50 writes) says on its own page, as the history and
// index pages do, that it is partial: how much of the set it scored, that
// its interval is over those records only, and that it is never a
// baseline; a whole run's page says none of it (issue 50).
func TestPartialRunPageSaysPartial(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{})
	full := servertest.Spec{ID: "whole", Test: runfile.TestFresh, Records: 400, Seed: 1}
	if code, _, body := ts.upload(full.Body(), ""); code != http.StatusCreated {
		t.Fatalf("whole run: %d %s", code, body)
	}
	part := servertest.Spec{ID: "limit-50", Test: runfile.TestFresh, Records: 400, Seed: 2}.Run()
	part.Docs = part.Docs[:50]
	if code, _, body := ts.upload(runBody(t, part), ""); code != http.StatusCreated {
		t.Fatalf("partial run: %d %s", code, body)
	}
	_, page := ts.get("/runs/limit-50")
	note := servertest.Between(page, `id="partial"`, "</div>")
	for _, want := range []string{"Partial run: 50 of 400 documents scored.", "over those records only", "never a baseline"} {
		if !strings.Contains(note, want) {
			t.Errorf("the partial run's page says %q, want %q", note, want)
		}
	}
	if iv := servertest.Between(page, `data-key="interval">`, "</span>"); !strings.Contains(iv, "over the 50 of 400 documents scored only") {
		t.Errorf("the partial run's interval %q does not say what it covers", iv)
	}
	if _, page := ts.get("/runs/whole"); strings.Contains(page, `id="partial"`) || strings.Contains(page, "scored only") {
		t.Errorf("a whole run's page calls it partial: %s", servertest.Between(page, "<h1>", "</dl>"))
	}
}

// TestAuditArtifactRunsChecked: an audit's artifact runs are checked, as
// the reference's are, against the stored runs of the same model file and
// settings: another model's runs relabelled as the artifact's are refused
// naming the stored run; where the server holds no such runs, the audit's
// page says those runs are the uploader's, unverified, and stops saying
// so once it checked them (issue 50).
func TestAuditArtifactRunsChecked(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{})
	ctx := context.Background()
	shaA, shaB, shaRef := strings.Repeat("a1", 32), strings.Repeat("b2", 32), strings.Repeat("c3", 32)
	judged := func(seed uint64, ref, art string) (*audit.Report, audit.RunFiles) {
		h := servertest.Spec{Seed: 5, Repo: testRepo}.Header()
		h.Model.File = "smollm2-135m"
		return audittest.Judged(t, audittest.Spec{Model: h.Model, Git: h.Git, Items: 420, Seed: seed, BPBRise: 0.02, Quantized: "q4_0",
			RefSHA256: ref, ArtSHA256: art, KL: audit.KL{Tokens: 12345, Mean: 0.0213, P99: 0.41, Max: 2.5, SameTop: 0.9612}})
	}
	unverified := func(id string) string {
		_, page := ts.get("/audits/" + id)
		const key = `data-key="audit-unverified">`
		return html.UnescapeString(strings.TrimPrefix(servertest.Between(page, key, "</p>"), key))
	}

	rep, files := judged(5, shaRef, shaA)
	first, err := ts.client.UploadAudit(ctx, auditUpload(t, rep, files))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"The reference's runs are the uploader's, unverified: this server held no run of smollm2-135m-f16.gguf (sha256 c3c3c3c3c3c3) with the audit's settings",
		"The artifact's runs are the uploader's, unverified: this server held no run of smollm2-135m-q4_0.gguf (sha256 a1a1a1a1a1a1)",
	} {
		if got := unverified(first.ID); !strings.Contains(got, want) {
			t.Errorf("an audit of files with no stored runs says %q, want %q", got, want)
		}
	}

	// The artifact's own runs, and the reference's Fresh Text run, stored.
	for id, r := range map[string]*runfile.Run{"a-fresh": files.ArtFresh, "a-probes": files.ArtProbes, "ref-fresh": files.RefFresh} {
		stored := *r
		stored.Header.ID = id
		if code, _, body := ts.upload(runBody(t, &stored), ""); code != http.StatusCreated {
			t.Fatalf("%s: %d %s", id, code, body)
		}
	}
	again, err := ts.client.UploadAudit(ctx, auditUpload(t, rep, files))
	if err != nil {
		t.Fatal(err)
	}
	if got := unverified(again.ID); !again.Created || got != "The reference's Probe Suite run is the uploader's, unverified: this server held no run of smollm2-135m-f16.gguf (sha256 c3c3c3c3c3c3) with the audit's settings to check them against." {
		t.Errorf("the audit again, its artifact's runs stored: created %v, it says %q; want only the reference's probes unverified", again.Created, got)
	}

	// Model B against B2, its artifact's runs relabelled as A's.
	forged, forgedFiles := judged(6, shaB, shaA)
	before := ts.state()
	ctype, body := multipartOf(t, auditUpload(t, forged, forgedFiles))
	code, out, _ := ts.do(http.MethodPost, "/api/v1/audits", ts.token, bytes.NewReader(body), "Content-Type", ctype)
	if want := "artifact-fresh.jsonl: the artifact's fresh scores are not those of stored run a-fresh of the same model file (sha256 a1a1a1a1a1a1)"; code != http.StatusBadRequest || !strings.Contains(errorOf(t, out), want) {
		t.Errorf("another model's runs as the artifact's: %d %s, want 400 naming %q", code, out, want)
	}
	if after := ts.state(); after != before {
		t.Errorf("the refused audit changed the store: %s, was %s", after, before)
	}
}

// TestAuditSaysChangeUnderMinimumEffect: a change whose interval excludes
// zero but which is smaller than the minimum effect is said to be so on
// the audit's page, not "no change" beside an interval above zero
// (issue 50).
func TestAuditSaysChangeUnderMinimumEffect(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{})
	h := servertest.Spec{Seed: 5, Repo: testRepo}.Header()
	h.Model.File = "smollm2-135m"
	rep, files := audittest.Judged(t, audittest.Spec{Model: h.Model, Git: h.Git, Items: 420, Seed: 5, BPBRise: 0.001, PRef: 0.6, PArt: 0.6,
		KL: audit.KL{Tokens: 12345, Mean: 0.0213, P99: 0.41, Max: 2.5, SameTop: 0.9612}})
	if f := rep.Fresh; f.Verdict != "no change" || f.CI[0] <= 0 || f.Delta >= f.MinEffect {
		t.Fatalf("the fixture: fresh %s %+v, want no change with an interval above zero", f.Verdict, f.CI)
	}
	up, err := ts.client.UploadAudit(context.Background(), auditUpload(t, rep, files))
	if err != nil {
		t.Fatal(err)
	}
	_, page := ts.get("/audits/" + up.ID)
	rows := rowsOf(t, page, `<table class="cards audit-summary">`)
	if len(rows) != 2 || rows[0][4] != "[+0.0010, +0.0010]" || rows[0][5] != "smaller than the 0.002 bpb minimum effect" {
		t.Errorf("the audit's summary rows %q, want Fresh Text's +0.0010 said smaller than the 0.002 bpb minimum effect", rows)
	}
}
