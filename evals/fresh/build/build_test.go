package build

import (
	"context"
	"flag"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/internal/goldentest"
)

var update = flag.Bool("update", false, "rewrite golden files")

const testUA = "udgam-ci-test/0 (https://example.org/udgam; tests@example.org)"

var (
	since = time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	until = time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
)

// testOptions points a build at the fakes with a fake clock.
func testOptions(w *fakeWiki, a *fakeArxiv, clock *fakeClock) Options {
	o := Options{
		Since: since, Until: until, MinChars: 300, ArxivMinChars: 200, ArxivPageSize: 2,
		UserAgent: testUA, Now: clock.Now, Sleep: clock.Sleep,
	}
	if w != nil {
		o.WikipediaAPI = w.srv.URL + "/w/api.php"
	}
	if a != nil {
		o.ArxivAPI = a.srv.URL + "/api/query"
	}
	return o
}

func newClock() *fakeClock { return &fakeClock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)} }

func ids(docs []Doc) []string {
	var out []string
	for _, d := range docs {
		out = append(out, d.ID)
	}
	return out
}

func TestWikipediaFiltersAndRechecks(t *testing.T) {
	t.Parallel()
	clock := newClock()
	w := newFakeWiki(t, clock)
	opts := testOptions(w, nil, clock)
	opts.Wikipedia = 10 // more than there are: every candidate is visited
	docs, rep, err := Build(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(docs), []string{"wikipedia-1001", "wikipedia-1009", "wikipedia-1010"}; !slices.Equal(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
	wantDropped := map[string]int{
		"wikipedia: deleted":                           1, // no page id left in the log
		"wikipedia: redirect":                          1,
		"wikipedia: disambiguation page":               1,
		"wikipedia: stub":                              2, // short source; short plain text
		"wikipedia: moved out of the main namespace":   1,
		"wikipedia: deleted (re-check)":                1,
		"wikipedia: tagged as AI-generated (re-check)": 2, // by category; by template
	}
	if !mapsEqual(rep.Dropped, wantDropped) {
		t.Errorf("dropped %v, want %v", rep.Dropped, wantDropped)
	}
	d := docs[0]
	wantText := "The Lumenfall Bridge is a cable-stayed footbridge over the Ardle estuary, opened to walkers and cyclists in August 2026. Its single mast leans away from the river so that the deck appears to hang from a drawn bow.\n\n" +
		"History\nA crossing at the site was first proposed after the ferry service closed. The design competition drew entries from several countries, and the winning scheme was chosen for its low maintenance cost and its view of the harbour.\n\n" +
		"Construction\nThe deck was assembled on the northern bank and pushed across the water in eleven stages over one summer.\n\n" +
		"Reception\nLocal papers praised the lighting scheme, which changes colour with the tide tables."
	want := Doc{
		ID: "wikipedia-1001", Text: wantText, Source: "wikipedia",
		URL: "https://en.wikipedia.org/wiki/Lumenfall_Bridge", License: "CC BY-SA 4.0", Date: "2026-09-02",
		Credit: `"Lumenfall Bridge" by Wikipedia contributors, https://en.wikipedia.org/wiki/Lumenfall_Bridge (revision 1250000101), CC BY-SA 4.0`,
	}
	if d != want {
		t.Errorf("doc\n got %+v\nwant %+v", d, want)
	}

	// The creation log was read whole, from the date, in the main namespace.
	logs := w.count(func(q url.Values) bool { return q.Get("list") == "logevents" })
	if logs != 2 {
		t.Errorf("%d log requests, want 2 (one continuation)", logs)
	}
	first := w.requests[0]
	for k, v := range map[string]string{"letype": "create", "lenamespace": "0", "ledir": "newer", "lestart": "2026-09-01T00:00:00Z", "leend": "2026-10-01T00:00:00Z"} {
		if first.Get(k) != v {
			t.Errorf("log query %s=%q, want %q", k, first.Get(k), v)
		}
	}
	// Extracts only for pages that passed the metadata screen: 1001, 1005,
	// 1006, 1007, 1008, 1009, 1010 (1011 is screened as a draft).
	if n := w.count(func(q url.Values) bool { return strings.Contains(q.Get("prop"), "extracts") }); n != 7 {
		t.Errorf("%d extract requests, want 7", n)
	}
	// The re-check's categories needed continuation (3 per answer here).
	if n := w.count(func(q url.Values) bool { return q.Get("clcontinue") != "" }); n == 0 {
		t.Error("re-check never continued; the category pagination is untested")
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestWikipediaStopsAtNAndIsStable(t *testing.T) {
	t.Parallel()
	good := map[string]bool{"wikipedia-1001": true, "wikipedia-1009": true, "wikipedia-1010": true}
	var runs [][]string
	for range 2 {
		clock := newClock()
		w := newFakeWiki(t, clock)
		opts := testOptions(w, nil, clock)
		opts.Wikipedia = 2
		docs, _, err := Build(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(docs) != 2 {
			t.Fatalf("got %d docs, want 2", len(docs))
		}
		for _, d := range docs {
			if !good[d.ID] {
				t.Errorf("kept %s, which should have been dropped", d.ID)
			}
		}
		runs = append(runs, ids(docs))
	}
	if !slices.Equal(runs[0], runs[1]) {
		t.Errorf("two builds differ: %v, %v", runs[0], runs[1])
	}
}

func TestRetriesAndPacing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		failures []int
		wantWait []time.Duration // retry waits, in order
		wantErr  bool
	}{
		{"429 honours Retry-After", []int{http.StatusTooManyRequests}, []time.Duration{7 * time.Second}, false},
		{"5xx backs off", []int{http.StatusBadGateway, http.StatusServiceUnavailable}, []time.Duration{time.Second, 2 * time.Second}, false},
		{"maxlag waits and asks again", []int{maxlagError, maxlagError}, []time.Duration{4 * time.Second, 8 * time.Second}, false},
		{"4xx is final", []int{http.StatusForbidden}, nil, true},
		{"gives up after retries", []int{500, 500, 500, 500, 500, 500}, []time.Duration{1, 2, 4, 8, 16}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newClock()
			w := newFakeWiki(t, clock)
			w.failures = tt.failures
			opts := testOptions(w, nil, clock)
			opts.Wikipedia = 1
			_, _, err := Build(context.Background(), opts)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, want error %v", err, tt.wantErr)
			}
			// Waits that are not the 200ms pacing are retries.
			var waits []time.Duration
			for _, d := range clock.slept {
				if d != 200*time.Millisecond {
					waits = append(waits, d)
				}
			}
			want := tt.wantWait
			if tt.name == "gives up after retries" {
				want = nil
				for _, s := range tt.wantWait {
					want = append(want, s*time.Second)
				}
			}
			if !slices.Equal(waits, want) {
				t.Errorf("retry waits %v, want %v", waits, want)
			}
			// Pacing: no two requests closer than the interval.
			for i := 1; i < len(w.times); i++ {
				if gap := w.times[i].Sub(w.times[i-1]); gap < 200*time.Millisecond {
					t.Errorf("requests %d and %d only %v apart", i-1, i, gap)
				}
			}
		})
	}
}

func TestArxiv(t *testing.T) {
	t.Parallel()
	clock := newClock()
	a := newFakeArxiv(t)
	opts := testOptions(nil, a, clock)
	opts.Arxiv = 10
	docs, rep, err := Build(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(docs), []string{"arxiv-2609.00011", "arxiv-2609.00420", "arxiv-2609.05555"}; !slices.Equal(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
	if want := map[string]int{"arxiv: short abstract": 1, "arxiv: duplicate": 1}; !mapsEqual(rep.Dropped, want) {
		t.Errorf("dropped %v, want %v", rep.Dropped, want)
	}
	if !slices.Equal(a.starts, []string{"0", "2", "4"}) {
		t.Errorf("pages read at %v, want 0 2 4", a.starts)
	}
	if want := "submittedDate:[202609010000 TO 202609302359]"; a.query[0] != want {
		t.Errorf("query %q, want %q", a.query[0], want)
	}
	// arXiv asks for 3 seconds between requests.
	if want := []time.Duration{3 * time.Second, 3 * time.Second}; !slices.Equal(clock.slept, want) {
		t.Errorf("slept %v, want %v", clock.slept, want)
	}
	d := docs[1]
	if strings.Contains(d.Text, "\n") || !strings.HasPrefix(d.Text, "Benchmarks built from the web leak into training sets within months of their release.") {
		t.Errorf("abstract not cleaned: %q", d.Text)
	}
	want := Doc{ID: "arxiv-2609.00420", Text: d.Text, Source: "arxiv", URL: "https://arxiv.org/abs/2609.00420", License: "CC0 1.0", Date: "2026-09-02",
		Credit: `arXiv:2609.00420 "Fresh Text as a Contamination-Free Benchmark" by Chen Wei, Dana Ruiz, Emil Novak et al., metadata CC0 1.0`}
	if d != want {
		t.Errorf("doc\n got %+v\nwant %+v", d, want)
	}
	if docs[0].Credit != `arXiv:2609.00011 "Depth or Width? Shape Rules for Small Language Models" by Ana Okafor, Bruno Lindqvist, metadata CC0 1.0` {
		t.Errorf("credit %q", docs[0].Credit)
	}
}

func TestArxivSpreadsPagesOverLargeResults(t *testing.T) {
	t.Parallel()
	clock := newClock()
	a := newFakeArxiv(t)
	opts := testOptions(nil, a, clock)
	opts.Arxiv, opts.ArxivQuery = 2, "cat:big"
	docs, rep, err := Build(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.starts, []string{"0", "500"}) {
		t.Errorf("pages read at %v, want 0 and 500 (spread over 1000 results)", a.starts)
	}
	if !strings.HasPrefix(a.query[0], "(cat:big) AND submittedDate:[") {
		t.Errorf("query %q", a.query[0])
	}
	if len(docs) != 2 || rep.Dropped["arxiv: beyond the number wanted"] != 2 {
		t.Errorf("docs %v, dropped %v", ids(docs), rep.Dropped)
	}
}

func TestArxivAPIError(t *testing.T) {
	t.Parallel()
	clock := newClock()
	a := newFakeArxiv(t)
	opts := testOptions(nil, a, clock)
	opts.Arxiv, opts.ArxivQuery = 2, "cat:broken"
	_, _, err := Build(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "incorrect id format") {
		t.Errorf("err %v, want the API's error message", err)
	}
}

// TestBuildGolden builds from both fakes and compares the written file with
// testdata/golden.jsonl (go test -update rewrites it).
func TestBuildGolden(t *testing.T) {
	t.Parallel()
	clock := newClock()
	opts := testOptions(newFakeWiki(t, clock), newFakeArxiv(t), clock)
	opts.Wikipedia, opts.Arxiv = 10, 10
	docs, rep, err := Build(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "fresh.jsonl")
	if err := WriteFile(out, docs); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out)
	goldentest.Check(t, filepath.Join("testdata", "golden.jsonl"), got, *update)
	if want := "kept 3 arxiv\nkept 3 wikipedia\n"; !strings.HasPrefix(rep.String(), want) {
		t.Errorf("report:\n%s", rep)
	}
}

func TestWriteFileRefusesBadRows(t *testing.T) {
	t.Parallel()
	good := Doc{ID: "a", Text: "text"}
	tests := []struct {
		name string
		docs []Doc
		err  string
	}{
		{"duplicate id", []Doc{good, good}, "duplicate id a"},
		{"missing id", []Doc{{Text: "x"}}, "row 1 has no id"},
		{"empty text", []Doc{good, {ID: "b", Text: " "}}, "b: empty"},
		{"invalid UTF-8", []Doc{{ID: "c", Text: "\xff"}}, "invalid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out.jsonl")
			os.WriteFile(out, []byte("previous\n"), 0o644)
			err := WriteFile(out, tt.docs)
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err %v, want %q", err, tt.err)
			}
			if b, _ := os.ReadFile(out); string(b) != "previous\n" {
				t.Errorf("the old file was touched: %q", b)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				t.Errorf("temporary files left: %v", ents)
			}
		})
	}
}

func TestOptionsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		mod  func(*Options)
		err  string
	}{
		{"no since", func(o *Options) { o.Since = time.Time{} }, "no --since"},
		{"until before since", func(o *Options) { o.Until = since.Add(-time.Hour) }, "not after"},
		{"nothing wanted", func(o *Options) { o.Wikipedia, o.Arxiv = 0, 0 }, "ask for some documents"},
		{"no user agent", func(o *Options) { o.UserAgent = "" }, "User-Agent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Options{Since: since, Until: until, Wikipedia: 1, UserAgent: testUA}
			tt.mod(&o)
			if _, _, err := Build(context.Background(), o); err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("err %v, want %q", err, tt.err)
			}
		})
	}
}

func TestCleanExtract(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"lead only", "One.\n\nTwo.\n", "One.\n\nTwo."},
		{"empty trailing sections go", "Lead.\n\n\n== See also ==\n\n\n== References ==\n", "Lead."},
		{"heading becomes a line", "Lead.\n\n== History ==\nBuilt.\n", "Lead.\n\nHistory\nBuilt."},
		{"parent kept for its child", "Lead.\n== Works ==\n=== Novels ===\nThree novels.\n", "Lead.\n\nWorks\n\nNovels\nThree novels."},
		{"skipped section takes its children", "Lead.\n== Notes ==\n=== Sources ===\nA list.\n== Legacy ==\nRemembered.", "Lead.\n\nLegacy\nRemembered."},
		{"blank runs collapse", "A.\n\n\n\nB.   \n", "A.\n\nB."},
		{"equals in text is not a heading", "x == y ==\n== ==\nLead.", "x == y ==\n== ==\nLead."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cleanExtract(tt.in); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
