// Package build makes a Fresh Text document set from text that did not exist
// before a date: English Wikipedia articles created after it and arXiv
// abstracts submitted after it. A model trained before the date cannot have
// seen them, which is what makes the test contamination-free.
//
// Choices, so the next builder can follow them:
//
//   - Wikipedia creations come from the creation log (list=logevents,
//     letype=create, main namespace), not from recentchanges, which only
//     reaches 30 days back. Drafts moved into the main namespace are logged
//     as moves and are not included.
//   - Candidates are visited in a fixed pseudo-random order (a hash of the
//     page id), so a set of N spreads over the whole date range instead of
//     its first day, and the same log gives the same choice.
//   - A page is dropped when it is gone (deleted), no longer in the main
//     namespace, a redirect, a disambiguation page (page property
//     "disambiguation"), or shorter than the minimum once reduced to plain
//     text (a stub). Right before writing, every kept page is checked again
//     and also dropped when editors have tagged it: the AI-generated cleanup
//     template or its speedy-deletion counterparts (see aiTemplates), or a
//     category of suspected AI-generated text, speedy deletion, articles for
//     deletion or proposed deletion (see dropCategory).
//   - arXiv abstracts come from the API's Atom feed, searched by submission
//     date and paged with start/max_results; when there are many more
//     papers than wanted, pages are read at offsets spread over the range.
//   - Every row carries its licence and credit: CC BY-SA 4.0 and "Wikipedia
//     contributors" with the page URL and revision for Wikipedia; CC0 1.0
//     (arXiv's licence for its metadata, abstracts included) with the arXiv
//     id for arXiv.
package build

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/udgamlabs/udgam-ci/internal/atomicfile"
	"github.com/udgamlabs/udgam-ci/internal/retry"
)

// Doc is one row of the output: the Fresh Text document format (id, text,
// and the optional source, url, license, date) plus a credit line.
type Doc struct {
	ID      string `json:"id"`
	Text    string `json:"text"`
	Source  string `json:"source"`
	URL     string `json:"url"`
	License string `json:"license"`
	Date    string `json:"date"`
	Credit  string `json:"credit"`
}

const (
	SourceWikipedia = "wikipedia"
	SourceArxiv     = "arxiv"

	LicenseWikipedia = "CC BY-SA 4.0"
	LicenseArxiv     = "CC0 1.0"

	DefaultWikipediaAPI = "https://en.wikipedia.org/w/api.php"
	DefaultArxivAPI     = "https://export.arxiv.org/api/query"
)

// Options say what to build and where from. Zero values get the defaults
// noted; Since is required.
type Options struct {
	Since time.Time // documents created at or after this instant
	Until time.Time // and before this one; zero means Now()

	Wikipedia     int // articles wanted (0: none)
	Arxiv         int // abstracts wanted (0: none)
	MinChars      int // shortest Wikipedia plain text kept, in characters (default 2000)
	ArxivMinChars int // shortest abstract kept (default 300)
	ArxivQuery    string
	ArxivPageSize int // entries per arXiv request (default 100)

	WikipediaAPI string // default DefaultWikipediaAPI
	ArxivAPI     string // default DefaultArxivAPI
	UserAgent    string // must name a contact (Wikimedia's User-Agent policy)

	// Minimum time between two requests to one site: Wikimedia asks for
	// serial requests, arXiv for one every 3 seconds (the defaults).
	WikipediaInterval time.Duration
	ArxivInterval     time.Duration

	HTTP  *http.Client
	Now   func() time.Time
	Sleep func(context.Context, time.Duration) error
	Log   io.Writer // progress lines; nil for none
}

func (o *Options) defaults() error {
	if o.Since.IsZero() {
		return errors.New("no --since date")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Until.IsZero() {
		o.Until = o.Now()
	}
	if !o.Until.After(o.Since) {
		return fmt.Errorf("--until %s is not after --since %s", o.Until.Format(time.DateOnly), o.Since.Format(time.DateOnly))
	}
	if o.Wikipedia < 0 || o.Arxiv < 0 || o.Wikipedia+o.Arxiv == 0 {
		return errors.New("ask for some documents: --wikipedia N and/or --arxiv N")
	}
	setDefault(&o.MinChars, 2000)
	setDefault(&o.ArxivMinChars, 300)
	setDefault(&o.ArxivPageSize, 100)
	if o.WikipediaAPI == "" {
		o.WikipediaAPI = DefaultWikipediaAPI
	}
	if o.ArxivAPI == "" {
		o.ArxivAPI = DefaultArxivAPI
	}
	if o.UserAgent == "" {
		return errors.New("no User-Agent: the APIs ask for one with a contact")
	}
	if o.WikipediaInterval == 0 {
		o.WikipediaInterval = 200 * time.Millisecond
	}
	if o.ArxivInterval == 0 {
		o.ArxivInterval = 3 * time.Second
	}
	if o.HTTP == nil {
		o.HTTP = &http.Client{Timeout: 2 * time.Minute}
	}
	if o.Sleep == nil {
		o.Sleep = retry.Sleep
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return nil
}

func setDefault(v *int, d int) {
	if *v <= 0 {
		*v = d
	}
}

func (o *Options) client(interval time.Duration) *client {
	return &client{http: o.HTTP, ua: o.UserAgent, interval: interval, retries: 5, now: o.Now, sleep: o.Sleep}
}

// Report counts what was kept and why the rest was dropped.
type Report struct {
	Kept    map[string]int // source -> documents
	Dropped map[string]int // "source: reason" -> documents
}

func (r *Report) drop(source, reason string) { r.Dropped[source+": "+reason]++ }

// String lists the counts in a stable order.
func (r *Report) String() string {
	var b strings.Builder
	for _, k := range sortedKeys(r.Kept) {
		fmt.Fprintf(&b, "kept %d %s\n", r.Kept[k], k)
	}
	for _, k := range sortedKeys(r.Dropped) {
		fmt.Fprintf(&b, "dropped %d %s\n", r.Dropped[k], k)
	}
	return b.String()
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Build collects the documents, sorted by id.
func Build(ctx context.Context, opts Options) ([]Doc, *Report, error) {
	if err := opts.defaults(); err != nil {
		return nil, nil, err
	}
	rep := &Report{Kept: map[string]int{}, Dropped: map[string]int{}}
	var docs []Doc
	if opts.Wikipedia > 0 {
		w := &wikipedia{opts: &opts, c: opts.client(opts.WikipediaInterval), rep: rep}
		got, err := w.build(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("wikipedia: %w", err)
		}
		docs = append(docs, got...)
	}
	if opts.Arxiv > 0 {
		a := &arxiv{opts: &opts, c: opts.client(opts.ArxivInterval), rep: rep}
		got, err := a.build(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("arxiv: %w", err)
		}
		docs = append(docs, got...)
	}
	sort.Slice(docs, func(i, j int) bool { return docs[i].ID < docs[j].ID })
	for _, d := range docs {
		rep.Kept[d.Source]++
	}
	return docs, rep, nil
}

// spread orders keys by a hash, a fixed pseudo-random order that does not
// depend on how the API listed them.
func spread[T any](items []T, key func(T) string) {
	h := func(s string) uint64 {
		f := fnv.New64a()
		f.Write([]byte("udgam-fresh/" + s))
		return f.Sum64()
	}
	sort.SliceStable(items, func(i, j int) bool {
		hi, hj := h(key(items[i])), h(key(items[j]))
		if hi != hj {
			return hi < hj
		}
		return key(items[i]) < key(items[j])
	})
}

// WriteFile writes docs as JSON Lines to path through a temporary file in
// the same directory, so a failed build never leaves a partial file under
// the final name. Rows are checked first: ids present and unique, text
// non-empty valid UTF-8.
func WriteFile(path string, docs []Doc) error {
	seen := make(map[string]bool, len(docs))
	for i, d := range docs {
		switch {
		case d.ID == "":
			return fmt.Errorf("write %s: row %d has no id", path, i+1)
		case seen[d.ID]:
			return fmt.Errorf("write %s: duplicate id %s", path, d.ID)
		case strings.TrimSpace(d.Text) == "" || !utf8.ValidString(d.Text):
			return fmt.Errorf("write %s: %s: empty or invalid UTF-8 text", path, d.ID)
		}
		seen[d.ID] = true
	}
	return atomicfile.Write(path, func(f io.Writer) error {
		w := bufio.NewWriter(f)
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for _, d := range docs {
			if err := enc.Encode(d); err != nil {
				return fmt.Errorf("%s: %w", d.ID, err)
			}
		}
		return w.Flush()
	})
}
