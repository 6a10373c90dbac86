package structure

import (
	"bufio"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// readmeMaxLines keeps README.md a front door a newcomer reads in five
// minutes (issue 41); everything longer lives in docs/, linked from it.
const readmeMaxLines = 300

// mdLink is a Markdown link or image target outside code.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// slug is the anchor GitHub gives a heading: lower case, letters, digits,
// hyphens and underscores kept, each space a hyphen, the rest dropped.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mdProse is a page's lines outside fenced blocks, inline code removed.
func mdProse(text string) []string {
	lines := mdLines(text)
	for i, line := range lines {
		lines[i] = inlineCode.ReplaceAllString(line, "")
	}
	return lines
}

var inlineCode = regexp.MustCompile("`[^`]*`")

// mdLines is a page's lines outside fenced blocks.
func mdLines(text string) []string {
	var out []string
	fenced := false
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, line)
		}
	}
	return out
}

// anchors are the heading anchors of a Markdown page.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	for _, line := range mdLines(text) {
		if h := strings.TrimLeft(line, "#"); h != line && strings.HasPrefix(h, " ") {
			out[slug(strings.TrimSpace(h))] = true
		}
	}
	return out
}

// brokenLinks lists the relative links of the page at name (a path from
// the repository's root) whose file is missing, or whose #anchor no
// heading of that file gives. read returns a file's text and whether it
// exists (a folder's text is empty).
func brokenLinks(name, text string, read func(string) (string, bool)) []string {
	var out []string
	for _, line := range mdProse(text) {
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			if file == "" {
				file = name
			} else {
				file = path.Clean(path.Join(path.Dir(name), file))
			}
			body, ok := read(file)
			switch {
			case !ok:
				out = append(out, name+": "+target+": no such file")
			case anchor != "" && strings.HasSuffix(file, ".md") && !anchors(body)[anchor]:
				out = append(out, name+": "+target+": no heading gives #"+anchor)
			}
		}
	}
	return out
}

// TestDocsLinks: README.md, the top-level pages and docs/ link only to
// files and headings that exist, README.md stays under readmeMaxLines and
// links every page of docs/ (moved sections must stay reachable).
func TestDocsLinks(t *testing.T) {
	t.Parallel()
	pages := docPages(t)
	for _, p := range []string{"ARCHITECTURE.md", "BENCHMARKS.md"} {
		b, err := os.ReadFile(filepath.Join("../..", p))
		if err != nil {
			t.Fatal(err)
		}
		pages[p] = string(b)
	}
	read := func(p string) (string, bool) {
		f := filepath.Join("../..", filepath.FromSlash(p))
		if fi, err := os.Stat(f); err != nil || fi.IsDir() {
			return "", err == nil
		}
		b, err := os.ReadFile(f)
		return string(b), err == nil
	}
	for name, text := range pages {
		for _, v := range brokenLinks(name, text, read) {
			t.Error(v)
		}
	}
	readme := pages["README.md"]
	if n := strings.Count(readme, "\n"); n >= readmeMaxLines {
		t.Errorf("README.md is %d lines, over %d: move the detail to docs/ and link it", n, readmeMaxLines)
	}
	for name := range pages {
		if strings.HasPrefix(name, "docs/") && name != "docs/example-comment.md" &&
			!strings.Contains(readme, "]("+name+")") && !strings.Contains(readme, "]("+name+"#") {
			t.Errorf("README.md does not link %s", name)
		}
	}
}

func TestBrokenLinks(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"README.md":      "# Top\n",
		"docs/a.md":      "# Stop when: `--until decided`\n## Portable builds (the Docker image)\n```\n# not a heading\n```\n",
		"docs/pic.png":   "",
		"examples/x.yml": "",
	}
	read := func(p string) (string, bool) { s, ok := files[p]; return s, ok }
	tests := []struct {
		name, page, text string
		broken           int
	}{
		{"file up and down", "docs/a.md", "[r](../README.md) [x](../examples/x.yml) ![p](pic.png)", 0},
		{"anchors as GitHub makes them", "README.md", "[a](docs/a.md#stop-when---until-decided) [b](docs/a.md#portable-builds-the-docker-image)", 0},
		{"same-page anchor", "docs/a.md", "[s](#portable-builds-the-docker-image)", 0},
		{"missing file", "README.md", "[a](docs/b.md)", 1},
		{"link relative to the page, not the root", "docs/a.md", "[r](README.md)", 1},
		{"missing anchor", "README.md", "[a](docs/a.md#stop)", 1},
		{"a heading inside a code block gives no anchor", "README.md", "[a](docs/a.md#not-a-heading)", 1},
		{"links in code are not links", "README.md", "`[a](nowhere.md)`\n```\n[b](nowhere.md)\n```", 0},
		{"web links are not checked", "README.md", "[w](https://example.com/x.md)", 0},
	}
	for _, tt := range tests {
		if got := brokenLinks(tt.page, tt.text, read); len(got) != tt.broken {
			t.Errorf("%s: %q, want %d broken", tt.name, got, tt.broken)
		}
	}
}
