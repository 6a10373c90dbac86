package build

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// paper is an arXiv entry as both readers see it, whitespace folded.
type paper struct {
	Source     string   `json:"source"`
	ID         string   `json:"id"`
	Title      string   `json:"title"`
	Summary    string   `json:"summary"`
	Published  string   `json:"published"`
	Authors    []string `json:"authors"`
	Categories []string `json:"categories"`
	Error      string   `json:"error"`
	Message    string   `json:"message"`
	Total      *int     `json:"total"`
	Papers     *int     `json:"papers"`
}

// TestRecordedAnswersReadByRealClients holds the recorded arXiv and
// Wikipedia answers in testdata (written by hand: testdata/README.md) to
// real clients of those APIs, run from the reference stack's Python with
// scripts/pyref/clients.sh's pinned packages: every Atom feed must be
// well-formed XML and read by arxiv.py (arXiv's Python client) as the
// builder reads it, entry for entry; arxiv.py's own Client must page
// through the fake arXiv to the same papers; and mwclient's list paging
// must walk the recorded creation log through the fake wiki's
// continuation to the events the files hold. Run by make crosscheck-fresh
// (UDGAM_PYREF_PYTHON).
func TestRecordedAnswersReadByRealClients(t *testing.T) {
	t.Parallel()
	py := os.Getenv("UDGAM_PYREF_PYTHON")
	if py == "" {
		t.Skip("UDGAM_PYREF_PYTHON is not set: make crosscheck-fresh runs this against arxiv.py and mwclient")
	}
	lib := pyClients(t, py)

	t.Run("atom files", func(t *testing.T) {
		files, _ := filepath.Glob(filepath.Join("testdata", "arxiv", "*.xml"))
		if len(files) == 0 {
			t.Fatal("no recorded feeds")
		}
		got := map[string][]paper{}
		for _, p := range runClients[paper](t, py, lib, append([]string{"atom"}, files...)...) {
			if p.Error != "" {
				t.Errorf("%s: %s: %s", p.Source, p.Error, p.Message)
				continue
			}
			if p.Total != nil {
				got[p.Source] = []paper{}
				continue
			}
			got[p.Source] = append(got[p.Source], p)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var feed atomFeed
			if err := xml.Unmarshal(b, &feed); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			var ours []paper
			for _, e := range feed.Entries {
				if strings.Contains(e.ID, "/api/errors") {
					continue // the builder reads it as the API's error, arxiv.py as no paper
				}
				ours = append(ours, ourPaper(e))
			}
			theirs, ok := got[f]
			if !ok {
				t.Errorf("%s: arxiv.py gave nothing", f)
				continue
			}
			for i := range theirs {
				theirs[i] = folded(theirs[i])
			}
			if !reflect.DeepEqual(ours, nilIfEmpty(theirs)) {
				t.Errorf("%s: the builder reads\n%+v\narxiv.py reads\n%+v", f, ours, theirs)
			}
		}
	})

	t.Run("arxiv client", func(t *testing.T) {
		a := newFakeArxiv(t)
		q := "submittedDate:[" + since.UTC().Format("200601021504") + " TO " + until.UTC().Add(-time.Minute).Format("200601021504") + "]"
		theirs := runClients[paper](t, py, lib, "arxiv", a.srv.URL+"/api/query", q, "2", "10")
		var ours []paper
		for _, name := range []string{"feed-0.xml", "feed-2.xml", "feed-4.xml"} {
			b, _ := os.ReadFile(filepath.Join("testdata", "arxiv", name))
			var feed atomFeed
			if err := xml.Unmarshal(b, &feed); err != nil {
				t.Fatal(err)
			}
			for _, e := range feed.Entries {
				ours = append(ours, ourPaper(e))
			}
		}
		for i := range theirs {
			if theirs[i].Error != "" {
				t.Fatalf("arxiv.py's client: %s: %s", theirs[i].Error, theirs[i].Message)
			}
			theirs[i] = folded(theirs[i])
		}
		if !reflect.DeepEqual(ours, theirs) {
			t.Errorf("through the fake arXiv, arxiv.py's client reads\n%+v\nthe recorded pages hold\n%+v", theirs, ours)
		}
		if got := strings.Join(a.starts, ","); got != "0,2,4" {
			t.Errorf("arxiv.py asked for starts %s, want 0,2,4", got)
		}
	})

	t.Run("wikipedia creation log", func(t *testing.T) {
		type event struct {
			LogID     int64  `json:"logid"`
			PageID    int64  `json:"pageid"`
			Title     string `json:"title"`
			Timestamp string `json:"timestamp"`
			Error     string `json:"error"`
			Message   string `json:"message"`
		}
		w := newFakeWiki(t, newClock())
		theirs := runClients[event](t, py, lib, "logevents", w.srv.URL+"/w/api.php")
		var ours []event
		for _, name := range []string{"logevents-1.json", "logevents-2.json"} {
			var page struct {
				Query struct {
					LogEvents []event `json:"logevents"`
				} `json:"query"`
			}
			readJSON(t, filepath.Join("testdata", "wikipedia", name), &page)
			ours = append(ours, page.Query.LogEvents...)
		}
		if len(theirs) == 1 && theirs[0].Error != "" {
			t.Fatalf("mwclient: %s: %s", theirs[0].Error, theirs[0].Message)
		}
		if !reflect.DeepEqual(ours, theirs) {
			t.Errorf("through the fake wiki, mwclient lists\n%+v\nthe recorded log holds\n%+v", theirs, ours)
		}
	})
}

func ourPaper(e atomEntry) paper {
	var cats []string
	for _, c := range e.Categories {
		cats = append(cats, c.Term)
	}
	var names []string
	for _, n := range e.Authors {
		names = append(names, clean(n))
	}
	pub, _ := time.Parse(time.RFC3339, strings.TrimSpace(e.Published))
	return paper{ID: arxivID(e.ID), Title: clean(e.Title), Summary: clean(e.Summary),
		Published: pub.UTC().Format("2006-01-02T15:04:05Z"), Authors: names, Categories: cats}
}

// folded is arxiv.py's reading in the builder's terms: the id without its
// version, whitespace folded.
func folded(p paper) paper {
	p.Source, p.ID = "", arxivID(p.ID)
	p.Title, p.Summary = clean(p.Title), clean(p.Summary)
	if len(p.Authors) == 0 {
		p.Authors = nil
	}
	if len(p.Categories) == 0 {
		p.Categories = nil
	}
	return p
}

func nilIfEmpty(p []paper) []paper {
	if len(p) == 0 {
		return nil
	}
	return p
}

// pyClients runs scripts/pyref/clients.sh, which prints the pinned
// clients' folder on its last line.
func pyClients(t *testing.T, py string) string {
	t.Helper()
	script := filepath.Join("..", "..", "..", "scripts", "pyref", "clients.sh")
	var stderr bytes.Buffer
	cmd := exec.Command("bash", script, py)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// runClients runs scripts/pyref/fresh_clients.py and decodes its lines.
func runClients[T any](t *testing.T, py, lib string, args ...string) []T {
	t.Helper()
	script := filepath.Join("..", "..", "..", "scripts", "pyref", "fresh_clients.py")
	cmd := exec.CommandContext(context.Background(), py, append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+lib, "NO_PROXY=127.0.0.1,localhost")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", script, args[0], err, stderr.String())
	}
	var got []T
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		var v T
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("%s %s: line %q: %v", script, args[0], line, err)
		}
		got = append(got, v)
	}
	return got
}
