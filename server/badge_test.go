package server_test

import (
	"bytes"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/internal/goldentest"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

// uploadRun uploads a synthetic run, its dataset renamed (a hostile name
// tests escaping) and, when smoke, marked as the smoke sample.
func uploadRun(t *testing.T, ts *testServer, sp servertest.Spec, dataset string, smoke bool) {
	t.Helper()
	r := sp.Run()
	if dataset != "" {
		r.Header.Dataset.Name = dataset
	}
	r.Header.Dataset.Smoke = smoke
	var b bytes.Buffer
	if err := runfile.Encode(&b, r); err != nil {
		t.Fatal(err)
	}
	if code, _, body := ts.upload(b.Bytes(), ""); code != http.StatusCreated {
		t.Fatalf("upload %s: %d %s", sp.ID, code, body)
	}
}

func badgePath(test string) string {
	return "/badge/repos/" + testRepo + "/models/" + model + "/" + test + ".svg"
}

func chartPath(test string) string {
	return "/chart/repos/" + testRepo + "/models/" + model + "/" + test + ".svg"
}

// waitFor polls path until its body contains want (the change's interval
// is stored by a background worker after the upload is answered).
func waitFor(t *testing.T, ts *testServer, path, want string) (http.Header, string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, body, h := ts.do(http.MethodGet, path, "", nil)
		if code == http.StatusOK && strings.Contains(string(body), want) {
			return h, string(body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d, never contains %q:\n%s", path, code, want, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBadge: the latest main run's score, its change since its baseline,
// coloured by the change's verdict, the data named, escaped, cached.
func TestBadge(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{})
	// probes regress 20 points on 400 items: a verdict no bootstrap misses;
	// a PR run after them must not be what the badge shows.
	uploadRun(t, ts, servertest.Spec{Test: runfile.TestProbes, Model: model, Seed: 1, Records: 400, Score: 60}, `held-out <set> & "more"`, false)
	uploadRun(t, ts, servertest.Spec{Test: runfile.TestProbes, Model: model, Seed: 2, Records: 400, Score: 40}, `held-out <set> & "more"`, false)
	uploadRun(t, ts, servertest.Spec{Test: runfile.TestProbes, Model: model, Seed: 3, Records: 400, Score: 90, Ref: "exp", PR: 7}, "", false)
	// fresh text improves, on the smoke sample.
	uploadRun(t, ts, servertest.Spec{Test: runfile.TestFresh, Model: model, Seed: 4, Records: 300, Score: 1.0}, "", true)
	uploadRun(t, ts, servertest.Spec{Test: runfile.TestFresh, Model: model, Seed: 5, Records: 300, Score: 0.8}, "", true)

	h, probes := waitFor(t, ts, badgePath("probes"), "since run probes-1")
	for _, want := range []string{
		`fill="#cf222e"`, // regressed: red
		`probes · held-out &lt;set&gt; &amp; &#34;more&#34;`,
		`run probes-2:`, // the latest main run, not the PR's
	} {
		if !strings.Contains(probes, want) {
			t.Errorf("probes badge lacks %q:\n%s", want, probes)
		}
	}
	if strings.Contains(probes, "<set>") || strings.Contains(probes, "probes-3") {
		t.Errorf("probes badge shows raw text or the PR's run:\n%s", probes)
	}
	if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "image/svg+xml") {
		t.Errorf("Content-Type %q", ct)
	}
	if cc := h.Get("Cache-Control"); !strings.Contains(cc, "max-age=") {
		t.Errorf("Cache-Control %q", cc)
	}
	goldentest.Check(t, filepath.Join("testdata", "badge_probes.svg"), []byte(probes), updating())

	_, fresh := waitFor(t, ts, badgePath("fresh"), "since run fresh-4")
	for _, want := range []string{`fill="#1a7f37"`, `fresh text · smoke sample`, ` bpb -0.`} {
		if !strings.Contains(fresh, want) {
			t.Errorf("fresh badge lacks %q:\n%s", want, fresh)
		}
	}
	goldentest.Check(t, filepath.Join("testdata", "badge_fresh.svg"), []byte(fresh), updating())

	// A proxy holding it gets 304.
	_, _, fh := ts.do(http.MethodGet, badgePath("fresh"), "", nil)
	if code, body, _ := ts.do(http.MethodGet, badgePath("fresh"), "", nil, "If-None-Match", fh.Get("ETag")); fh.Get("ETag") == "" || code != http.StatusNotModified || len(body) != 0 {
		t.Errorf("If-None-Match %q: %d %q, want 304", fh.Get("ETag"), code, body)
	}
	// Unknown models and tests, and malformed paths, are 404.
	for _, p := range []string{
		"/badge/repos/" + testRepo + "/models/nobody/none/probes.svg",
		"/badge/repos/other/repo/models/" + model + "/probes.svg",
		"/badge/repos/" + testRepo + "/models/" + model + "/bogus.svg",
		"/badge/repos/" + testRepo + "/models/" + model + "/probes",
		"/badge/x",
	} {
		if code, _ := ts.get(p); code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, code)
		}
	}
}

// TestEmbedPrivateAndUnknownAlike: on a private server a stored model's
// badge and chart answer exactly as an unknown model's do, without a
// token or with one, and no slower or faster: both answer before the
// store is read (the test then closes the store, and the answers stay).
func TestEmbedPrivateAndUnknownAlike(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{Private: true})
	seedHistory(t, ts, 4)
	known := []string{badgePath("probes"), chartPath("fresh")}
	unknown := []string{"/badge/repos/nobody/none/models/x/probes.svg", "/chart/repos/nobody/none/models/x/fresh.svg"}
	answer := func(path, token string) string {
		code, body, h := ts.do(http.MethodGet, path, token, nil)
		return fmt.Sprintf("%d %s %s %s", code, h.Get("Content-Type"), h.Get("Cache-Control"), body)
	}
	want := answer(unknown[0], "")
	if !strings.HasPrefix(want, "404 ") {
		t.Fatalf("unknown model: %s", want)
	}
	for _, p := range append(known, unknown...) {
		for _, tok := range []string{"", ts.token} {
			if got := answer(p, tok); got != want {
				t.Errorf("%s (token %v): %s\nwant as an unknown model's: %s", p, tok != "", got, want)
			}
		}
	}
	// Timing: interleaved, the medians agree within generous bounds.
	const n = 300
	var tk, tu []time.Duration
	for i := range n {
		for j, p := range []string{known[i%2], unknown[i%2]} {
			start := time.Now()
			ts.do(http.MethodGet, p, "", nil)
			if d := time.Since(start); j == 0 {
				tk = append(tk, d)
			} else {
				tu = append(tu, d)
			}
		}
	}
	mk, mu := median(tk), median(tu)
	if hi, lo := max(mk, mu), min(mk, mu); float64(hi) > 1.5*float64(lo)+float64(200*time.Microsecond) {
		t.Errorf("median latency: stored private model %v, unknown model %v", mk, mu)
	}
	if err := ts.st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range known {
		if got := answer(p, ""); got != want {
			t.Errorf("%s with the store closed: %s (it read the store)", p, got)
		}
	}
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// chartRE finds the history page's inline chart of each test.
var chartRE = regexp.MustCompile(`(?s)<svg class="chart".*?</svg>`)

// TestChartEmbed: the standalone chart is the history page's chart, the
// same SVG from the same runs, with a size for an <img>; no script.
func TestChartEmbed(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{})
	seedHistory(t, ts, 12)
	_, page := ts.get("/repos/" + testRepo + "/models/" + model)
	inline := chartRE.FindAllString(page, -1)
	if len(inline) != 2 {
		t.Fatalf("%d charts on the history page, want 2", len(inline))
	}
	for i, test := range []string{runfile.TestFresh, runfile.TestProbes} {
		code, body, h := ts.do(http.MethodGet, chartPath(test), "", nil)
		svg := string(body)
		if code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "image/svg+xml") || h.Get("Cache-Control") == "" {
			t.Fatalf("%s: %d %v", test, code, h)
		}
		if strings.Contains(strings.ToLower(svg), "<script") {
			t.Errorf("%s chart has a script", test)
		}
		if got := strings.Replace(svg, ` width="960" height="360"`, "", 1); got != inline[i] {
			t.Errorf("%s chart differs from the page's:\n%s", test, goldentest.Diff("page", "embed", []byte(inline[i]), []byte(got)))
		}
		goldentest.Check(t, filepath.Join("testdata", "chart_embed_"+test+".svg"), body, updating())
	}
	if code, _ := ts.get("/chart/repos/" + testRepo + "/models/nobody/fresh.svg"); code != http.StatusNotFound {
		t.Errorf("unknown model's chart: %d", code)
	}
}

// readmePage shows the badges and charts as a README on GitHub does: in
// an 830 px column, images no wider than it; the script writes onto
// <body> each image's natural and rendered size once loaded.
const readmePage = `<!doctype html><html><body style="margin:0;background:#fff">
<div style="width:830px">%s</div>
<script>addEventListener("load", function () {
var out = [];
document.querySelectorAll("img").forEach(function (i) {
  out.push(i.id + ":" + i.complete + ":" + i.naturalWidth + "x" + i.naturalHeight + ":" + i.width + "x" + i.height);
});
document.body.setAttribute("data-imgs", out.join(" "));
});</script></body></html>`

// TestChromiumBadgeAndChart: a real browser loads both badges and both
// charts as images in a README-wide column and draws them: each has its
// size, the chart scales to the column, and the screenshot holds the
// verdict's colour and the chart's base-branch blue.
func TestChromiumBadgeAndChart(t *testing.T) {
	t.Parallel()
	bin := chromium(t)
	ts := startServer(t, server.Config{})
	seedHistory(t, ts, 12)
	uploadRun(t, ts, servertest.Spec{Test: runfile.TestProbes, Model: model, Seed: 90, Records: 150, Score: 20,
		Started: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)}, "", false)
	waitFor(t, ts, badgePath("probes"), `#cf222e`)
	imgs := fmt.Sprintf(`<img id="bp" src="%s"> <img id="bf" src="%s"><br><img id="cf" src="%s" style="max-width:100%%"><img id="cp" src="%s" style="max-width:100%%">`,
		ts.url+badgePath("probes"), ts.url+badgePath("fresh"), ts.url+chartPath("fresh"), ts.url+chartPath("probes"))
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, readmePage, imgs)
	}))
	t.Cleanup(hs.Close)

	dom := string(runChromium(t, bin, "--window-size=900,1000", "--virtual-time-budget=5000", "--dump-dom", hs.URL))
	m := regexp.MustCompile(`data-imgs="([^"]*)"`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the page's script did not run:\n%.2000s", dom)
	}
	got := map[string][4]int{}
	for _, f := range strings.Fields(m[1]) {
		var id string
		var nw, nh, w, h int
		var ok bool
		if _, err := fmt.Sscanf(strings.NewReplacer(":", " ", "x", " ").Replace(f), "%s %t %d %d %d %d", &id, &ok, &nw, &nh, &w, &h); err != nil || !ok {
			t.Fatalf("image %q did not load: %v", f, err)
		}
		got[id] = [4]int{nw, nh, w, h}
	}
	for _, id := range []string{"bp", "bf"} {
		if g := got[id]; g[1] != 20 || g[0] < 100 || g[0] > 400 || g[2] != g[0] {
			t.Errorf("badge %s: natural %dx%d, shown %dx%d", id, g[0], g[1], g[2], g[3])
		}
	}
	for _, id := range []string{"cf", "cp"} {
		// Scaled to the column, its smallest text (11 units) stays over 9 px.
		if g := got[id]; g[0] != 960 || g[1] != 360 || g[2] != 830 || g[3] != 311 || 11*float64(g[2])/960 < 9 {
			t.Errorf("chart %s: natural %dx%d, shown %dx%d; want 960x360 shown at 830x311", id, g[0], g[1], g[2], g[3])
		}
	}

	shot := filepath.Join(t.TempDir(), "readme.png")
	runChromium(t, bin, "--screenshot="+shot, "--window-size=900,800", "--virtual-time-budget=5000", hs.URL)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	count := map[[3]uint32]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			count[[3]uint32{r >> 8, g >> 8, bl >> 8}]++
		}
	}
	for name, c := range map[string][3]uint32{"regressed red": {0xcf, 0x22, 0x2e}, "base-branch blue": {0x1d, 0x4e, 0xd8}, "badge grey": {0x55, 0x55, 0x55}} {
		if count[c] < 50 {
			t.Errorf("the screenshot has %d pixels of %s", count[c], name)
		}
	}
	if keep := os.Getenv("UDGAM_SCREENSHOT_DIR"); keep != "" {
		copyFile(t, shot, filepath.Join(keep, "readme-embeds.png"))
	}
}

// TestBadgeSinceAnchor: with an anchor pinned, the badge shows the newest
// main run's change since it, judged against the anchor's drift budget.
func TestBadgeSinceAnchor(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{})
	regress(t, ts, true) // 20 points below the anchor, whose budget is 5
	_, svg := waitFor(t, ts, badgePath("probes"), "since anchor")
	for _, want := range []string{`fill="#cf222e"`, "since the anchor, run probes-1:", "regressed (drift budget 5.0)"} {
		if !strings.Contains(svg, want) {
			t.Errorf("badge lacks %q:\n%s", want, svg)
		}
	}
}
