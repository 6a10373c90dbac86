package build

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeWiki serves the MediaWiki action API from the recorded-style pages in
// testdata/wikipedia: the creation log as recorded (two pages joined by
// lecontinue), and page queries assembled from each page's recorded fields
// for the props asked, categories paginated with clcontinue as the real API
// does when a batch has more than its limit. A page's "recheck" fields
// replace its own in queries that ask for categories (the re-check), which
// is how a page gets deleted or tagged between fetch and re-check.
type fakeWiki struct {
	t      *testing.T
	srv    *httptest.Server
	pages  map[int64]map[string]json.RawMessage
	clock  *fakeClock
	catMax int // categories per answer

	mu       sync.Mutex
	requests []url.Values
	times    []time.Time // fake-clock time of each request
	failures []int       // statuses (or maxlagError) to answer before serving, in order
}

// maxlagError in failures answers the API's "replicas lagged" error.
const maxlagError = -1

func newFakeWiki(t *testing.T, clock *fakeClock) *fakeWiki {
	w := &fakeWiki{t: t, clock: clock, catMax: 3, pages: map[int64]map[string]json.RawMessage{}}
	var pages []map[string]json.RawMessage
	readJSON(t, "testdata/wikipedia/pages.json", &pages)
	for _, p := range pages {
		id, _ := strconv.ParseInt(string(p["pageid"]), 10, 64)
		w.pages[id] = p
	}
	w.srv = httptest.NewServer(http.HandlerFunc(w.serve))
	t.Cleanup(w.srv.Close)
	return w
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func (w *fakeWiki) count(match func(url.Values) bool) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, q := range w.requests {
		if match(q) {
			n++
		}
	}
	return n
}

func (w *fakeWiki) serve(rw http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	w.mu.Lock()
	w.requests = append(w.requests, q)
	w.times = append(w.times, w.clock.Now())
	var fail int
	if len(w.failures) > 0 {
		fail, w.failures = w.failures[0], w.failures[1:]
	}
	w.mu.Unlock()
	if ua := r.Header.Get("User-Agent"); !strings.Contains(ua, "@") && !strings.Contains(ua, "http") {
		w.t.Errorf("User-Agent %q names no contact", ua)
	}
	if fail == maxlagError {
		rw.Header().Set("Retry-After", "5")
		rw.Header().Set("Content-Type", "application/json; charset=utf-8")
		rw.Write([]byte(`{"error":{"code":"maxlag","info":"Waiting for 10.64.48.35: 6 seconds lagged.","host":"10.64.48.35","lag":6,"type":"db"},"servedby":"mw-api-ext.eqiad.main-7d9c"}`))
		return
	}
	if fail != 0 {
		if fail == http.StatusTooManyRequests {
			rw.Header().Set("Retry-After", "7")
		}
		http.Error(rw, "slow down", fail)
		return
	}
	if q.Get("action") != "query" || q.Get("format") != "json" || q.Get("formatversion") != "2" {
		w.t.Errorf("unexpected query %v", q)
	}
	rw.Header().Set("Content-Type", "application/json; charset=utf-8")
	if q.Get("list") == "logevents" {
		file := "testdata/wikipedia/logevents-1.json"
		switch q.Get("lecontinue") {
		case "":
		case "20260914081200|88806":
			file = "testdata/wikipedia/logevents-2.json"
		default:
			w.t.Errorf("unknown lecontinue %q", q.Get("lecontinue"))
		}
		b, _ := os.ReadFile(file)
		rw.Write(b)
		return
	}
	json.NewEncoder(rw).Encode(w.pagesAnswer(q))
}

// pagesAnswer builds a prop query's answer the way formatversion=2 does.
func (w *fakeWiki) pagesAnswer(q url.Values) map[string]any {
	props := map[string]bool{}
	for _, p := range strings.Split(q.Get("prop"), "|") {
		props[p] = true
	}
	ids := strings.Split(q.Get("pageids"), "|")
	if props["extracts"] && len(ids) > 1 {
		w.t.Errorf("whole-page extracts asked for %d pages at once", len(ids))
	}
	if len(ids) > 50 {
		w.t.Errorf("%d page ids in one query", len(ids))
	}
	recheck := props["categories"]
	recs := make([]map[string]json.RawMessage, len(ids))
	for i, s := range ids {
		id, _ := strconv.ParseInt(s, 10, 64)
		rec, ok := w.pages[id]
		if ok && recheck && rec["recheck"] != nil {
			rec = overlay(w.t, rec, rec["recheck"])
		}
		if ok && string(rec["missing"]) != "true" {
			recs[i] = rec
		}
	}
	// Categories of the whole batch form one list, answered catMax at a
	// time; clcontinue ("pageid|index") says where the next answer starts.
	type pos struct {
		page int
		cat  map[string]any
		key  string
	}
	var flat []pos
	for i, rec := range recs {
		if rec == nil || !props["categories"] {
			continue
		}
		var cats []map[string]any
		json.Unmarshal(rec["categories"], &cats)
		for j, c := range cats {
			flat = append(flat, pos{i, c, ids[i] + "|" + strconv.Itoa(j)})
		}
	}
	first := 0
	if c := q.Get("clcontinue"); c != "" {
		for first < len(flat) && flat[first].key != c {
			first++
		}
		if first == len(flat) {
			w.t.Errorf("bad clcontinue %q", c)
		}
	}
	last := min(first+w.catMax, len(flat))
	var cont map[string]string
	if last < len(flat) {
		cont = map[string]string{"clcontinue": flat[last].key, "continue": "||"}
	}
	cats := map[int][]map[string]any{}
	for _, p := range flat[first:last] {
		cats[p.page] = append(cats[p.page], p.cat)
	}

	var out []map[string]any
	for i, s := range ids {
		rec := recs[i]
		if rec == nil {
			id, _ := strconv.ParseInt(s, 10, 64)
			out = append(out, map[string]any{"pageid": id, "missing": true})
			continue
		}
		page := map[string]any{}
		for _, k := range []string{"pageid", "ns", "title"} {
			page[k] = rec[k]
		}
		if props["info"] {
			for _, k := range []string{"contentmodel", "pagelanguage", "touched", "lastrevid", "length", "redirect"} {
				if v, ok := rec[k]; ok {
					page[k] = v
				}
			}
			if q.Get("inprop") == "url" {
				page["fullurl"] = rec["fullurl"]
			}
		}
		if props["pageprops"] && rec["pageprops"] != nil {
			page["pageprops"] = rec["pageprops"]
		}
		if props["extracts"] {
			page["extract"] = rec["extract"]
		}
		// Templates are complete in the first answer of a continued query.
		if props["templates"] && q.Get("clcontinue") == "" && rec["templates"] != nil {
			var ts []map[string]any
			json.Unmarshal(rec["templates"], &ts)
			var keep []map[string]any
			for _, t := range ts {
				for _, name := range strings.Split(q.Get("tltemplates"), "|") {
					if t["title"] == name {
						keep = append(keep, t)
					}
				}
			}
			if keep != nil {
				page["templates"] = keep
			}
		}
		if c := cats[i]; c != nil {
			page["categories"] = c
		}
		out = append(out, page)
	}
	ans := map[string]any{"batchcomplete": cont == nil, "query": map[string]any{"pages": out}}
	if cont != nil {
		ans["continue"] = cont
	}
	return ans
}

// overlay returns rec with the fields of patch replacing its own.
func overlay(t *testing.T, rec map[string]json.RawMessage, patch json.RawMessage) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for k, v := range rec {
		out[k] = v
	}
	var p map[string]json.RawMessage
	if err := json.Unmarshal(patch, &p); err != nil {
		t.Fatal(err)
	}
	for k, v := range p {
		out[k] = v
	}
	return out
}

// fakeArxiv serves the recorded feeds in testdata/arxiv by start offset;
// the query "cat:big" selects the big-*.xml feeds, "cat:broken" the error.
type fakeArxiv struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	starts []string
	query  []string
}

func newFakeArxiv(t *testing.T) *fakeArxiv {
	a := &fakeArxiv{t: t}
	a.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		a.mu.Lock()
		a.starts = append(a.starts, q.Get("start"))
		a.query = append(a.query, q.Get("search_query"))
		a.mu.Unlock()
		if q.Get("sortBy") != "submittedDate" || q.Get("max_results") == "" {
			t.Errorf("unexpected query %v", q)
		}
		prefix := "feed-"
		switch {
		case strings.Contains(q.Get("search_query"), "cat:big"):
			prefix = "big-"
		case strings.Contains(q.Get("search_query"), "cat:broken"):
			prefix = "error"
		}
		name := prefix + q.Get("start") + ".xml"
		if prefix == "error" {
			name = "error.xml"
		}
		b, err := os.ReadFile(filepath.Join("testdata", "arxiv", name))
		if err != nil {
			http.Error(rw, "no fixture "+name, http.StatusBadRequest)
			return
		}
		rw.Header().Set("Content-Type", "application/atom+xml; charset=utf-8")
		rw.Write(b)
	}))
	t.Cleanup(a.srv.Close)
	return a
}

// fakeClock moves only when slept on, so pacing and backoff are visible.
type fakeClock struct {
	mu    sync.Mutex
	t     time.Time
	slept []time.Duration
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *fakeClock) Sleep(_ context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slept = append(c.slept, d)
	c.t = c.t.Add(d)
	return nil
}
