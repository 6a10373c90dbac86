package build

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/udgamlabs/udgam-ci/internal/retry"
)

// wikipedia builds the Wikipedia part through the MediaWiki action API
// (format=json, formatversion=2).
type wikipedia struct {
	opts *Options
	c    *client
	rep  *Report
}

// creation is one entry of the creation log.
type creation struct {
	PageID int64
	Title  string
	Time   time.Time
}

type apiResponse struct {
	Continue map[string]json.RawMessage `json:"continue"`
	Error    *struct {
		Code string `json:"code"`
		Info string `json:"info"`
	} `json:"error"`
	Query struct {
		LogEvents []struct {
			LogPage   int64  `json:"logpage"`
			NS        int    `json:"ns"`
			Title     string `json:"title"`
			Timestamp string `json:"timestamp"`
		} `json:"logevents"`
		Pages []wikiPage `json:"pages"`
	} `json:"query"`
}

type wikiPage struct {
	PageID     int64             `json:"pageid"`
	NS         int               `json:"ns"`
	Title      string            `json:"title"`
	Missing    bool              `json:"missing"`
	Redirect   bool              `json:"redirect"`
	Length     int               `json:"length"`
	LastRevID  int64             `json:"lastrevid"`
	FullURL    string            `json:"fullurl"`
	PageProps  map[string]string `json:"pageprops"`
	Extract    string            `json:"extract"`
	Templates  []titled          `json:"templates"`
	Categories []titled          `json:"categories"`
}

type titled struct {
	NS    int    `json:"ns"`
	Title string `json:"title"`
}

// aiTemplates are the cleanup and speedy-deletion templates editors put on
// suspected machine-generated articles. The API lists a template reached
// through a redirect ({{AI generated}}, {{LLM}}) under its target too.
var aiTemplates = []string{"Template:AI-generated", "Template:Db-llm", "Template:Db-g15"}

// dropCategory says why a page in this category must go, or "" to keep it:
// editors' AI-generated tags (the cleanup template files pages under
// "Articles containing suspected AI-generated texts from <month>") and any
// pending deletion.
func dropCategory(title string) string {
	t := strings.ToLower(title)
	switch {
	case strings.Contains(t, "ai-generated"), strings.Contains(t, "llm-generated"):
		return "tagged as AI-generated"
	case strings.Contains(t, "candidates for speedy deletion"),
		strings.Contains(t, "articles for deletion"),
		strings.Contains(t, "proposed for deletion"), strings.Contains(t, "proposed deletion"):
		return "nominated for deletion"
	}
	return ""
}

// query runs one API query and every continuation of it, calling each with
// every answer.
func (w *wikipedia) query(ctx context.Context, params url.Values, each func(*apiResponse) error) error {
	params.Set("action", "query")
	params.Set("format", "json")
	params.Set("formatversion", "2")
	params.Set("maxlag", "5") // Wikimedia's etiquette for scripts: back off when replicas lag
	cont := map[string]string{}
	lagged := 0
	for n := 0; ; n++ {
		if n > 100000 {
			return fmt.Errorf("query %s: continuation does not end", params.Encode())
		}
		q := url.Values{}
		for k, v := range params {
			q[k] = v
		}
		for k, v := range cont {
			q.Set(k, v)
		}
		u := w.opts.WikipediaAPI + "?" + q.Encode()
		body, err := w.c.get(ctx, u)
		if err != nil {
			return err
		}
		var r apiResponse
		if err := json.Unmarshal(body, &r); err != nil {
			return fmt.Errorf("GET %s: decode: %w", u, err)
		}
		if r.Error != nil && (r.Error.Code == "maxlag" || r.Error.Code == "ratelimited") && lagged < w.c.retries {
			if err := w.c.sleep(ctx, retry.Backoff(lagged+2, nil, w.c.now())); err != nil {
				return err
			}
			lagged++
			continue // the same request again
		}
		if r.Error != nil {
			return fmt.Errorf("GET %s: API error %s: %s", u, r.Error.Code, r.Error.Info)
		}
		lagged = 0
		if err := each(&r); err != nil {
			return err
		}
		if len(r.Continue) == 0 {
			return nil
		}
		cont = map[string]string{}
		for k, raw := range r.Continue {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				s = string(bytes.TrimSpace(raw)) // numbers such as excontinue
			}
			cont[k] = s
		}
	}
}

// listCreations reads the creation log of the main namespace between the
// dates. Pages deleted since have no page id there and are counted out.
func (w *wikipedia) listCreations(ctx context.Context) ([]creation, error) {
	params := url.Values{
		"list":        {"logevents"},
		"letype":      {"create"},
		"lenamespace": {"0"},
		"ledir":       {"newer"},
		"lestart":     {w.opts.Since.UTC().Format(time.RFC3339)},
		"leend":       {w.opts.Until.UTC().Format(time.RFC3339)},
		"leprop":      {"ids|title|timestamp"},
		"lelimit":     {"500"},
	}
	var out []creation
	seen := map[int64]bool{}
	err := w.query(ctx, params, func(r *apiResponse) error {
		for _, e := range r.Query.LogEvents {
			if e.LogPage == 0 {
				w.rep.drop(SourceWikipedia, "deleted")
				continue
			}
			t, err := time.Parse(time.RFC3339, e.Timestamp)
			if err != nil {
				return fmt.Errorf("creation log: page %d: bad timestamp %q", e.LogPage, e.Timestamp)
			}
			if e.NS != 0 || seen[e.LogPage] || t.Before(w.opts.Since) || !t.Before(w.opts.Until) {
				continue
			}
			seen[e.LogPage] = true
			out = append(out, creation{PageID: e.LogPage, Title: e.Title, Time: t})
		}
		fmt.Fprintf(w.opts.Log, "wikipedia: %d page creations listed\n", len(out))
		return nil
	})
	return out, err
}

// pages fetches pages by id with the given properties, merging the lists
// that continuation spreads over several answers.
func (w *wikipedia) pages(ctx context.Context, ids []int64, params url.Values) (map[int64]*wikiPage, error) {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatInt(id, 10)
	}
	params.Set("pageids", strings.Join(s, "|"))
	out := map[int64]*wikiPage{}
	err := w.query(ctx, params, func(r *apiResponse) error {
		for _, p := range r.Query.Pages {
			if have, ok := out[p.PageID]; ok {
				have.Templates = append(have.Templates, p.Templates...)
				have.Categories = append(have.Categories, p.Categories...)
				continue
			}
			out[p.PageID] = &p
		}
		return nil
	})
	return out, err
}

// screen says why a page cannot be used, or "" when it can.
func screen(p *wikiPage) string {
	switch {
	case p == nil || p.Missing:
		return "deleted"
	case p.NS != 0:
		return "moved out of the main namespace"
	case p.Redirect:
		return "redirect"
	}
	if _, ok := p.PageProps["disambiguation"]; ok {
		return "disambiguation page"
	}
	return ""
}

// batch is how many pages one metadata query asks for (the API's limit
// for ordinary clients).
const batch = 50

func (w *wikipedia) build(ctx context.Context) ([]Doc, error) {
	cands, err := w.listCreations(ctx)
	if err != nil {
		return nil, err
	}
	spread(cands, func(c creation) string { return strconv.FormatInt(c.PageID, 10) })
	var kept []Doc
	for len(cands) > 0 && len(kept) < w.opts.Wikipedia {
		var fresh []Doc
		for len(cands) > 0 && len(kept)+len(fresh) < w.opts.Wikipedia {
			n := min(batch, len(cands))
			got, err := w.collect(ctx, cands[:n], w.opts.Wikipedia-len(kept)-len(fresh))
			if err != nil {
				return nil, err
			}
			fresh = append(fresh, got.docs...)
			cands = cands[got.used:]
		}
		// Check again right before keeping: pages are deleted or tagged
		// days after their creation.
		checked, err := w.recheck(ctx, fresh)
		if err != nil {
			return nil, err
		}
		kept = append(kept, checked...)
		fmt.Fprintf(w.opts.Log, "wikipedia: %d of %d articles\n", len(kept), w.opts.Wikipedia)
	}
	return kept, nil
}

type collected struct {
	docs []Doc
	used int // candidates consumed
}

// collect screens a batch of candidates by their metadata and fetches the
// plain text of those that pass, stopping once want documents are found.
func (w *wikipedia) collect(ctx context.Context, cands []creation, want int) (collected, error) {
	ids := make([]int64, len(cands))
	for i, c := range cands {
		ids[i] = c.PageID
	}
	meta, err := w.pages(ctx, ids, url.Values{"prop": {"info|pageprops"}, "ppprop": {"disambiguation"}})
	if err != nil {
		return collected{}, err
	}
	var out collected
	for i, c := range cands {
		if len(out.docs) == want {
			break
		}
		out.used = i + 1
		p := meta[c.PageID]
		if why := screen(p); why != "" {
			w.rep.drop(SourceWikipedia, why)
			continue
		}
		// The wikitext is always longer than its plain text: a page whose
		// source is short is a stub without fetching it.
		if p.Length < w.opts.MinChars {
			w.rep.drop(SourceWikipedia, "stub")
			continue
		}
		doc, why, err := w.article(ctx, c)
		if err != nil {
			return collected{}, err
		}
		if why != "" {
			w.rep.drop(SourceWikipedia, why)
			continue
		}
		out.docs = append(out.docs, doc)
	}
	return out, nil
}

// article fetches one page's plain-text extract (the API gives whole-page
// extracts one page per request).
func (w *wikipedia) article(ctx context.Context, c creation) (Doc, string, error) {
	pages, err := w.pages(ctx, []int64{c.PageID}, url.Values{
		"prop":            {"extracts|info|pageprops"},
		"explaintext":     {"1"},
		"exsectionformat": {"wiki"},
		"inprop":          {"url"},
		"ppprop":          {"disambiguation"},
	})
	if err != nil {
		return Doc{}, "", err
	}
	p := pages[c.PageID]
	if why := screen(p); why != "" {
		return Doc{}, why, nil
	}
	text := cleanExtract(p.Extract)
	if utf8.RuneCountInString(text) < w.opts.MinChars {
		return Doc{}, "stub", nil
	}
	page := p.FullURL
	if page == "" {
		page = "https://en.wikipedia.org/wiki/" + url.PathEscape(strings.ReplaceAll(p.Title, " ", "_"))
	}
	return Doc{
		ID:      "wikipedia-" + strconv.FormatInt(p.PageID, 10),
		Text:    text,
		Source:  SourceWikipedia,
		URL:     page,
		License: LicenseWikipedia,
		Date:    c.Time.UTC().Format(time.DateOnly),
		Credit:  fmt.Sprintf("%q by Wikipedia contributors, %s (revision %d), %s", p.Title, page, p.LastRevID, LicenseWikipedia),
	}, "", nil
}

// recheck asks again about every page just before it is kept, with its
// templates and categories, and keeps those still fit.
func (w *wikipedia) recheck(ctx context.Context, docs []Doc) ([]Doc, error) {
	var kept []Doc
	for start := 0; start < len(docs); start += batch {
		part := docs[start:min(start+batch, len(docs))]
		ids := make([]int64, len(part))
		for i, d := range part {
			ids[i], _ = strconv.ParseInt(strings.TrimPrefix(d.ID, "wikipedia-"), 10, 64)
		}
		pages, err := w.pages(ctx, ids, url.Values{
			"prop":        {"info|pageprops|templates|categories"},
			"ppprop":      {"disambiguation"},
			"tltemplates": {strings.Join(aiTemplates, "|")},
			"tllimit":     {"max"},
			"cllimit":     {"max"},
		})
		if err != nil {
			return nil, err
		}
		for i, d := range part {
			p := pages[ids[i]]
			why := screen(p)
			if why == "" {
				why = tagged(p)
			}
			if why != "" {
				w.rep.drop(SourceWikipedia, why+" (re-check)")
				continue
			}
			kept = append(kept, d)
		}
	}
	return kept, nil
}

// tagged says why editors' tags on a page rule it out, or "".
func tagged(p *wikiPage) string {
	for _, t := range p.Templates {
		for _, ai := range aiTemplates {
			if t.Title == ai {
				return "tagged as AI-generated"
			}
		}
	}
	for _, c := range p.Categories {
		if why := dropCategory(c.Title); why != "" {
			return why
		}
	}
	return ""
}
