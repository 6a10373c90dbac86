package build

import (
	"strings"
)

// skipSections hold lists of links and citations rather than prose; the
// plain-text extract leaves them empty or as bare lists.
var skipSections = map[string]bool{
	"references": true, "external links": true, "see also": true, "further reading": true,
	"notes": true, "sources": true, "bibliography": true, "citations": true, "footnotes": true,
	"notes and references": true, "works cited": true,
}

type section struct {
	level int // 0 for the lead
	title string
	body  []string
}

// cleanExtract turns a plain-text extract with wiki-style headings
// ("== History ==") into running text: reference-like sections go, with
// their subsections; headings with nothing under them go; headings become
// plain lines; runs of blank lines become one.
func cleanExtract(s string) string {
	var secs []section
	cur := section{}
	for _, line := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		line = strings.TrimRight(line, " \t")
		if level, title, ok := heading(line); ok {
			secs = append(secs, cur)
			cur = section{level: level, title: title}
			continue
		}
		cur.body = append(cur.body, line)
	}
	secs = append(secs, cur)

	// Drop skipped sections and their subsections.
	var kept []section
	skipBelow := 0 // while > 0, sections deeper than this level are dropped
	for _, sec := range secs {
		if skipBelow > 0 && sec.level > skipBelow {
			continue
		}
		skipBelow = 0
		if sec.level > 0 && skipSections[strings.ToLower(sec.title)] {
			skipBelow = sec.level
			continue
		}
		kept = append(kept, sec)
	}

	var b strings.Builder
	for i, sec := range kept {
		body := strings.TrimSpace(collapseBlank(sec.body))
		if sec.level > 0 && body == "" && !hasText(kept[i+1:], sec.level) {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		if sec.level > 0 {
			b.WriteString(sec.title)
			if body != "" {
				b.WriteString("\n")
			}
		}
		b.WriteString(body)
	}
	return strings.TrimSpace(b.String())
}

// hasText reports whether any subsection (deeper than level, before the
// next section at level or above) has a body.
func hasText(rest []section, level int) bool {
	for _, s := range rest {
		if s.level <= level {
			return false
		}
		if strings.TrimSpace(strings.Join(s.body, "")) != "" {
			return true
		}
	}
	return false
}

// heading parses "== Title ==" (2 to 6 equals signs on each side).
func heading(line string) (int, string, bool) {
	n := len(line) - len(strings.TrimLeft(line, "="))
	if n < 2 || n > 6 || !strings.HasSuffix(line, strings.Repeat("=", n)) || len(line) <= 2*n {
		return 0, "", false
	}
	title := strings.TrimSpace(line[n : len(line)-n])
	if title == "" {
		return 0, "", false
	}
	return n - 1, title, true
}

func collapseBlank(lines []string) string {
	var out []string
	blank := false
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			blank = true
			continue
		}
		if blank && len(out) > 0 {
			out = append(out, "")
		}
		blank = false
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}
