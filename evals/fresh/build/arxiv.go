package build

import (
	"context"
	"encoding/xml"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// arxiv builds the arXiv part from the API's Atom feed.
type arxiv struct {
	opts *Options
	c    *client
	rep  *Report
}

type atomFeed struct {
	Total   int         `xml:"http://a9.com/-/spec/opensearch/1.1/ totalResults"`
	Entries []atomEntry `xml:"http://www.w3.org/2005/Atom entry"`
}

type atomEntry struct {
	ID         string   `xml:"http://www.w3.org/2005/Atom id"`
	Title      string   `xml:"http://www.w3.org/2005/Atom title"`
	Summary    string   `xml:"http://www.w3.org/2005/Atom summary"`
	Published  string   `xml:"http://www.w3.org/2005/Atom published"`
	Authors    []string `xml:"http://www.w3.org/2005/Atom author>name"`
	Categories []struct {
		Term string `xml:"term,attr"`
	} `xml:"http://www.w3.org/2005/Atom category"`
}

// maxOffset is the deepest start the arXiv API pages to.
const maxOffset = 30000

// overshoot reads a quarter more entries than wanted, for those dropped.
func overshoot(n int) int { return n + (n+3)/4 }

func (a *arxiv) build(ctx context.Context) ([]Doc, error) {
	size := a.opts.ArxivPageSize
	first, err := a.page(ctx, 0, size)
	if err != nil {
		return nil, err
	}
	entries := first.Entries
	total := min(first.Total, maxOffset)
	// Read enough pages for the documents wanted, at starts spread evenly
	// over all the results, or every page when there are few.
	pages := (overshoot(a.opts.Arxiv) + size - 1) / size
	for i := 1; i < pages; i++ {
		start := i * size
		if pages*size < total {
			start = i * total / pages
		}
		if start >= total {
			break
		}
		p, err := a.page(ctx, start, size)
		if err != nil {
			return nil, err
		}
		entries = append(entries, p.Entries...)
	}
	fmt.Fprintf(a.opts.Log, "arxiv: %d entries read of %d\n", len(entries), first.Total)

	var docs []Doc
	seen := map[string]bool{}
	for _, e := range entries {
		d, why := a.doc(e)
		if why == "" && seen[d.ID] {
			why = "duplicate"
		}
		if why != "" {
			a.rep.drop(SourceArxiv, why)
			continue
		}
		seen[d.ID] = true
		docs = append(docs, d)
	}
	spread(docs, func(d Doc) string { return d.ID })
	if len(docs) > a.opts.Arxiv {
		a.rep.Dropped[SourceArxiv+": beyond the number wanted"] += len(docs) - a.opts.Arxiv
		docs = docs[:a.opts.Arxiv]
	}
	return docs, nil
}

// page reads one page of the feed. The API is known to answer an empty page
// now and then for a query that has results: such pages are asked again.
func (a *arxiv) page(ctx context.Context, start, size int) (*atomFeed, error) {
	q := "submittedDate:[" + a.opts.Since.UTC().Format("200601021504") + " TO " +
		a.opts.Until.UTC().Add(-time.Minute).Format("200601021504") + "]"
	if a.opts.ArxivQuery != "" {
		q = "(" + a.opts.ArxivQuery + ") AND " + q
	}
	params := url.Values{
		"search_query": {q},
		"sortBy":       {"submittedDate"},
		"sortOrder":    {"ascending"},
		"start":        {strconv.Itoa(start)},
		"max_results":  {strconv.Itoa(size)},
	}
	u := a.opts.ArxivAPI + "?" + params.Encode()
	for try := 0; ; try++ {
		body, err := a.c.get(ctx, u)
		if err != nil {
			return nil, err
		}
		var f atomFeed
		if err := xml.Unmarshal(body, &f); err != nil {
			return nil, fmt.Errorf("GET %s: decode feed: %w", u, err)
		}
		// Errors come back as a feed with one entry whose id is an error URL.
		if len(f.Entries) == 1 && strings.Contains(f.Entries[0].ID, "/api/errors") {
			return nil, fmt.Errorf("GET %s: API error: %s", u, clean(f.Entries[0].Summary))
		}
		if len(f.Entries) > 0 || start >= f.Total || try == 2 {
			return &f, nil
		}
	}
}

var versionRE = regexp.MustCompile(`v[0-9]+$`)

// arxivID turns an entry id URL into the bare id, without version.
func arxivID(id string) string {
	id = strings.TrimSpace(id)
	if i := strings.Index(id, "/abs/"); i >= 0 {
		id = id[i+len("/abs/"):]
	}
	return versionRE.ReplaceAllString(id, "")
}

// doc makes a row of an entry, or says why it is dropped.
func (a *arxiv) doc(e atomEntry) (Doc, string) {
	id := arxivID(e.ID)
	if id == "" {
		return Doc{}, "no id"
	}
	pub, err := time.Parse(time.RFC3339, strings.TrimSpace(e.Published))
	if err != nil {
		return Doc{}, "bad date"
	}
	if pub.Before(a.opts.Since) || !pub.Before(a.opts.Until) {
		return Doc{}, "outside the dates"
	}
	text := clean(e.Summary)
	if utf8.RuneCountInString(text) < a.opts.ArxivMinChars {
		return Doc{}, "short abstract"
	}
	credit := fmt.Sprintf("arXiv:%s %q", id, clean(e.Title))
	if names := authors(e.Authors); names != "" {
		credit += " by " + names
	}
	return Doc{
		ID:      "arxiv-" + id,
		Text:    text,
		Source:  SourceArxiv,
		URL:     "https://arxiv.org/abs/" + id,
		License: LicenseArxiv,
		Date:    pub.UTC().Format(time.DateOnly),
		Credit:  credit + ", metadata " + LicenseArxiv,
	}, ""
}

// clean joins the feed's wrapped lines into single-spaced text.
func clean(s string) string { return strings.Join(strings.Fields(s), " ") }

func authors(names []string) string {
	for i := range names {
		names[i] = clean(names[i])
	}
	if len(names) > 3 {
		return strings.Join(names[:3], ", ") + " et al."
	}
	return strings.Join(names, ", ")
}
