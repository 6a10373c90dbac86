package server_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"html"
	"image/png"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

var updateScreenshot = flag.Bool("update-screenshot", false, "write docs/history.png from the seeded history page")

// chromium finds Debian's chromium. Without it the test is skipped, except
// under CI (CI set), where a missing browser is a failure.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed (apt-get install -y chromium); CI is set, so this fails instead of skipping")
	}
	t.Skip("chromium is not installed (apt-get install -y chromium)")
	return ""
}

// runChromium runs headless chromium with the flags that keep it offline
// and quiet, and returns its stdout.
func runChromium(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--hide-scrollbars", "--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
	}
	return out.Bytes()
}

func seedHistory(t *testing.T, ts *testServer, revisions int) {
	t.Helper()
	for _, sp := range servertest.History(model, revisions, 150) {
		if code, _, body := ts.upload(sp.Body(), ""); code != 201 {
			t.Fatalf("seed %s: %d %s", sp.ID, code, body)
		}
	}
}

func TestChromiumHistoryPage(t *testing.T) {
	t.Parallel()
	bin := chromium(t)
	ts := startServer(t, server.Config{})
	const revisions = 40
	seedHistory(t, ts, revisions)
	url := ts.url + "/models/" + model

	dom := string(runChromium(t, bin, "--dump-dom", url))
	charts := regexp.MustCompile(`<svg class="chart"`).FindAllStringIndex(dom, -1)
	if len(charts) != 2 {
		t.Fatalf("%d charts in the DOM, want 2 (bpb and accuracy)", len(charts))
	}
	for _, id := range []string{`id="runs-fresh"`, `id="runs-probes"`} {
		if !strings.Contains(dom, id) {
			t.Fatalf("table %s missing from the DOM", id)
		}
	}
	// Every run is a row and a point; the flagged revision is marked.
	if rows := strings.Count(dom, `<tr>`); rows < 2*revisions {
		t.Fatalf("%d table rows, want at least %d", rows, 2*revisions)
	}
	if strings.Count(dom, `class="flag"`) < 2 {
		t.Fatal("the flagged runs are not marked")
	}
	for _, want := range []string{"bits per byte (lower is better)", "probe accuracy", "base branch", "95% interval"} {
		if !strings.Contains(dom, want) {
			t.Fatalf("the page lacks %q", want)
		}
	}

	dir := t.TempDir()
	for _, shot := range []struct{ name, size string }{{"history.png", "1280,1600"}, {"history-phone.png", "390,1400"}} {
		path := filepath.Join(dir, shot.name)
		runChromium(t, bin, "--screenshot="+path, "--window-size="+shot.size, url)
		f, err := os.Open(path)
		if err != nil {
			t.Fatalf("no screenshot: %v", err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("screenshot %s: %v", shot.name, err)
		}
		if b := img.Bounds(); b.Dx() < 300 || b.Dy() < 1000 {
			t.Fatalf("screenshot %s is %v", shot.name, b)
		}
		if keep := os.Getenv("UDGAM_SCREENSHOT_DIR"); keep != "" {
			copyFile(t, path, filepath.Join(keep, shot.name))
		}
	}
	// For a person to look at: the other pages, when asked.
	if keep := os.Getenv("UDGAM_SCREENSHOT_DIR"); keep != "" {
		for name, path := range map[string]string{"index.png": "/", "run.png": "/runs/probes-0020", "compare.png": "/compare?base=probes-0018&head=probes-0019"} {
			runChromium(t, bin, "--screenshot="+filepath.Join(keep, name), "--window-size=1280,1400", ts.url+path)
		}
	}
	if *updateScreenshot {
		copyFile(t, filepath.Join(dir, "history.png"), filepath.Join("..", "docs", "history.png"))
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// phoneFrame shows a page in a 390 px wide frame (headless chromium's
// window is at least 500 px wide) and writes onto its own <body> what a
// reader there meets: the frame's width, the page's scroll width, text
// rendered under 11 CSS px (SVG text by its scale on screen), numbers
// broken across lines, table cells and key values ([data-key]: headline,
// interval, verdict) that lie outside the screen's width, how many key
// values there are, and which values marked data-first lie below the
// first screen (844 px).
const phoneFrame = `<!doctype html><html><body style="margin:0">
<iframe id="f" src="%s" style="width:390px;height:844px;border:0"></iframe>
<script>addEventListener("load", function () {
var f = document.getElementById("f"), doc = f.contentDocument, win = f.contentWindow, d = doc.documentElement, b = document.body;
var W = d.clientWidth, small = [], broken = [], off = [];
var numRE = /(?<![\w\-.])[\[(]?[-+\u2212]?\d[\d.,:%%\-]*[\])]?/g;
var tw = doc.createTreeWalker(doc.body, NodeFilter.SHOW_TEXT), n;
while ((n = tw.nextNode())) {
  var el = n.parentElement, text = n.nodeValue;
  if (!/\S/.test(text) || el.closest("title, style")) continue;
  var all = doc.createRange(); all.selectNodeContents(n);
  if (!all.getClientRects().length) continue; // not rendered
  var px = parseFloat(win.getComputedStyle(el).fontSize);
  if (el instanceof win.SVGElement) { var m = el.getScreenCTM(); px *= Math.hypot(m.a, m.b); }
  if (px < 11) small.push(px.toFixed(1) + "px " + text.trim().slice(0, 30));
  if (el.closest(".mono, code")) continue; // hashes and ids may wrap
  numRE.lastIndex = 0;
  for (var mm; (mm = numRE.exec(text)); ) {
    var r = doc.createRange(); r.setStart(n, mm.index); r.setEnd(n, mm.index + mm[0].length);
    var tops = {}, rs = r.getClientRects();
    for (var i = 0; i < rs.length; i++) if (rs[i].width > 0) tops[Math.round(rs[i].top)] = 1;
    if (Object.keys(tops).length > 1) broken.push(mm[0]);
  }
}
doc.querySelectorAll("td, th, [data-key]").forEach(function (e) {
  var r = e.getBoundingClientRect();
  if (r.width > 0 && (r.left < -0.5 || r.right > W + 0.5)) off.push((e.getAttribute("data-key") || e.tagName) + " " + e.textContent.trim().slice(0, 20) + " at " + Math.round(r.left) + ".." + Math.round(r.right));
});
b.setAttribute("data-client-width", String(W));
b.setAttribute("data-scroll-width", String(d.scrollWidth));
b.setAttribute("data-small", small.slice(0, 8).join(" | "));
b.setAttribute("data-broken", broken.slice(0, 8).join(" | "));
b.setAttribute("data-off", off.slice(0, 8).join(" | "));
b.setAttribute("data-keys", String(doc.querySelectorAll("[data-key]").length));
var below = [];
doc.querySelectorAll("[data-first]").forEach(function (e) {
  var r = e.getBoundingClientRect();
  if (r.top > 844) below.push((e.getAttribute("data-key") || e.tagName) + " at " + Math.round(r.top) + "px");
});
b.setAttribute("data-below", below.join(" | "));
b.setAttribute("data-done", "1");
});</script></body></html>`

// phoneProxy serves /phone?path=P (phoneFrame around P) and the server's
// pages under the same origin, letting that origin frame them (test only).
func phoneProxy(t *testing.T, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := httputil.NewSingleHostReverseProxy(u)
	p.ModifyResponse = func(resp *http.Response) error {
		// The page's own policy stays (a style it refuses must fail the
		// test), but for being framed by the measuring page.
		csp := resp.Header.Get("Content-Security-Policy")
		resp.Header.Set("Content-Security-Policy", strings.Replace(csp, "frame-ancestors 'none'", "frame-ancestors 'self'", 1))
		resp.Header.Del("X-Frame-Options")
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("/", p)
	mux.HandleFunc("/phone", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, phoneFrame, html.EscapeString(r.URL.Query().Get("path")))
	})
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return hs.URL
}

// TestChromiumLegibleAtPhoneWidth loads every page in a 390 px wide
// window and asserts what a reader there needs (issue 32): no text under
// 11 CSS px (the history chart's included), no number broken across
// lines, every table cell and every key value (headline, interval,
// verdict) within the screen's width, so nothing that matters needs a
// sideways scroll, and the page itself no wider than the screen.
func TestChromiumLegibleAtPhoneWidth(t *testing.T) {
	t.Parallel()
	bin := chromium(t)
	ts := startServer(t, server.Config{})
	seedHistory(t, ts, 12)
	proxy := phoneProxy(t, ts.url)
	pages := []struct {
		path string
		keys int // key values the page marks
	}{
		{"/", 2},
		{"/models/" + model, 0},
		{"/runs/probes-0010", 2},
		{"/runs/fresh-0010", 2},
		{"/compare?base=probes-0008&head=probes-0009", 4},
		{"/compare?base=fresh-0008&head=fresh-0009", 4},
	}
	for _, pg := range pages {
		checkPhone(t, bin, proxy, pg.path, pg.keys)
	}
	shot := filepath.Join(t.TempDir(), "compare-phone.png")
	runChromium(t, bin, "--screenshot="+shot, "--window-size=390,844", ts.url+"/compare?base=probes-0008&head=probes-0009")
	if keep := os.Getenv("UDGAM_SCREENSHOT_DIR"); keep != "" {
		copyFile(t, shot, filepath.Join(keep, "compare-phone.png"))
	}
}

// checkPhone loads path in a 390 px wide frame and fails for what a
// reader there would meet: text under 11 CSS px, numbers broken across
// lines, cells or key values off the screen, a page wider than the
// screen, fewer than keys key values.
func checkPhone(t *testing.T, bin, proxy, path string, keys int) {
	t.Helper()
	attr := func(dom, name string) string {
		m := regexp.MustCompile(name + `="([^"]*)"`).FindStringSubmatch(dom)
		if m == nil {
			return ""
		}
		return html.UnescapeString(m[1])
	}
	dom := string(runChromium(t, bin, "--window-size=390,844", "--virtual-time-budget=5000", "--dump-dom", proxy+"/phone?path="+url.QueryEscape(path)))
	if attr(dom, "data-done") != "1" {
		t.Fatalf("%s: the measuring script did not run:\n%.2000s", path, dom)
	}
	if c, _ := strconv.Atoi(attr(dom, "data-client-width")); c > 390 || c < 300 {
		t.Fatalf("%s: the window is %d px wide, want 390", path, c)
	}
	if k, _ := strconv.Atoi(attr(dom, "data-keys")); k < keys {
		t.Errorf("%s: %d key values marked, want %d", path, k, keys)
	}
	if w, _ := strconv.Atoi(attr(dom, "data-scroll-width")); w > 390 {
		t.Errorf("%s: the page is %d px wide in a 390 px window", path, w)
	}
	for _, c := range []struct{ name, what string }{
		{"data-small", "text under 11 CSS px"},
		{"data-broken", "numbers broken across lines"},
		{"data-off", "cells or key values outside the 390 px screen (a sideways scroll)"},
		{"data-below", "what must come first (data-first: a verdict, a headline) below the first screen"},
	} {
		if v := attr(dom, c.name); v != "" {
			t.Errorf("%s: %s: %s", path, c.what, v)
		}
	}
}

// TestChromiumHistoryShowsDrift renders the history page of a model with
// a pinned anchor in headless chromium: the anchor's level and budget
// lines and the four runs beyond the budget are in the page as drawn,
// and the page stays legible at a phone's width.
func TestChromiumHistoryShowsDrift(t *testing.T) {
	t.Parallel()
	bin := chromium(t)
	ts := startServer(t, server.Config{CompareResamples: 200})
	if code, _, body := ts.upload(driftBody(t, 0, "main", 0), ""); code != 201 {
		t.Fatalf("anchor upload: %d %s", code, body)
	}
	budget := 0.01
	if _, err := ts.client.PinAnchor(context.Background(), "fresh-merge-00", &budget); err != nil {
		t.Fatal(err)
	}
	for k := 1; k <= 10; k++ {
		if code, _, body := ts.upload(driftBody(t, k, "main", 0), ""); code != 201 {
			t.Fatalf("merge %d: %d %s", k, code, body)
		}
	}
	ts.srv.WaitDeltas()
	path := "/repos/" + testRepo + "/models/" + model
	dom := string(runChromium(t, bin, "--dump-dom", ts.url+path))
	for want, n := range map[string]int{`<rect class="drift"`: 4, `<line class="anchor"`: 2, `title="its change since the anchor is beyond`: 4,
		`data-label="since anchor"`: 11} {
		if got := strings.Count(dom, want); got != n {
			t.Errorf("the rendered page has %d of %q, want %d", got, want, n)
		}
	}
	checkPhone(t, bin, phoneProxy(t, ts.url), path, 0)
	shot := filepath.Join(t.TempDir(), "history-drift.png")
	runChromium(t, bin, "--screenshot="+shot, "--window-size=1280,1200", ts.url+path)
	if keep := os.Getenv("UDGAM_SCREENSHOT_DIR"); keep != "" {
		copyFile(t, shot, filepath.Join(keep, "history-drift.png"))
	}
}
