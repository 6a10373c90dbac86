package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/udgamlabs/udgam-ci/evals/fresh/build"
	"github.com/udgamlabs/udgam-ci/internal/release"
)

type freshBuildOptions struct {
	Out                     string
	Since, Until            time.Time
	Wikipedia, Arxiv        int
	MinChars, ArxivMinChars int
	ArxivQuery              string
	WikipediaAPI, ArxivAPI  string
	Contact                 string
}

func runFreshBuild(e *env, args []string) error {
	var o freshBuildOptions
	var since, until string
	fs := newFlags(e, "fresh build",
		"build a Fresh Text set (JSON Lines) from English Wikipedia articles created and arXiv abstracts submitted on or after --since; "+
			"redirects, disambiguations, stubs, and pages deleted or tagged as AI-generated since are dropped; every row carries its licence and credit",
		"udgam-ci fresh build fresh.jsonl --since 2026-09-01 --wikipedia 1000 --arxiv 1000 --contact you@example.org")
	fs.StringVar(&since, "since", "", "first day (YYYY-MM-DD, UTC, or RFC 3339); required")
	fs.StringVar(&until, "until", "", "day after the last (exclusive; default now)")
	fs.IntVar(&o.Wikipedia, "wikipedia", 500, "Wikipedia articles wanted (0 for none)")
	fs.IntVar(&o.Arxiv, "arxiv", 500, "arXiv abstracts wanted (0 for none)")
	fs.IntVar(&o.MinChars, "min-chars", 2000, "shortest Wikipedia article kept, in characters of plain text (shorter ones are stubs)")
	fs.IntVar(&o.ArxivMinChars, "arxiv-min-chars", 300, "shortest arXiv abstract kept, in characters")
	fs.StringVar(&o.ArxivQuery, "arxiv-query", "", `extra arXiv search terms ANDed with the dates, e.g. "cat:cs.CL"`)
	fs.StringVar(&o.WikipediaAPI, "wikipedia-api", build.DefaultWikipediaAPI, "MediaWiki API endpoint")
	fs.StringVar(&o.ArxivAPI, "arxiv-api", build.DefaultArxivAPI, "arXiv API endpoint")
	fs.StringVar(&o.Contact, "contact", "", "an email or URL for the User-Agent, so the sites can reach you")
	var err error
	if o.Out, err = parseOne(fs, args, "output file, OUT.jsonl"); err != nil {
		return err
	}
	if since == "" {
		return usageError{errors.New("--since is required")}
	}
	if o.Since, err = parseDay(since); err != nil {
		return usageError{fmt.Errorf("--since: %w", err)}
	}
	if until != "" {
		if o.Until, err = parseDay(until); err != nil {
			return usageError{fmt.Errorf("--until: %w", err)}
		}
	}
	return freshBuild(e, o)
}

// parseDay reads a date (midnight UTC) or a full RFC 3339 time.
func parseDay(s string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not YYYY-MM-DD or an RFC 3339 time", s)
	}
	return t, nil
}

func freshBuild(e *env, o freshBuildOptions) error {
	ua := "udgam-ci/" + release.Version + " (https://github.com/udgamlabs/udgam-ci"
	if o.Contact != "" {
		ua += "; " + o.Contact
	}
	ua += ") fresh-build"
	docs, rep, err := build.Build(e.Ctx, build.Options{
		Since: o.Since, Until: o.Until, Wikipedia: o.Wikipedia, Arxiv: o.Arxiv,
		MinChars: o.MinChars, ArxivMinChars: o.ArxivMinChars, ArxivQuery: o.ArxivQuery,
		WikipediaAPI: o.WikipediaAPI, ArxivAPI: o.ArxivAPI, UserAgent: ua,
		Now: e.Now, Log: e.Stderr,
	})
	if err != nil {
		return err
	}
	if err := build.WriteFile(o.Out, docs); err != nil {
		return err
	}
	fmt.Fprint(e.Stdout, rep)
	fmt.Fprintf(e.Stdout, "wrote %d documents to %s\n", len(docs), o.Out)
	return nil
}
