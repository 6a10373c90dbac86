package report

import (
	"fmt"
	"io"
	"strings"
	"text/template"

	"github.com/udgamlabs/udgam-ci/templates"
)

// mdTemplates parses the embedded Markdown templates. Parsing per call is
// cheap and keeps no shared state.
func mdTemplates() (*template.Template, error) {
	t, err := template.New("md").Funcs(template.FuncMap{
		"join": strings.Join,
		"align": func(right []bool, i int) string {
			if i < len(right) && right[i] {
				return "---:"
			}
			return "---"
		},
		"models": func(ms []modelRef) string {
			parts := make([]string, len(ms))
			for i, m := range ms {
				parts[i] = mdCode(m.Label)
				if m.URL != "" {
					parts[i] = "[" + parts[i] + "](" + m.URL + ")"
				}
			}
			return strings.Join(parts, ", ")
		},
	}).ParseFS(templates.FS, "md/*.md.tmpl")
	if err != nil {
		return nil, fmt.Errorf("parse Markdown templates: %w", err)
	}
	return t, nil
}

func executeMD(w io.Writer, name string, data any) error {
	t, err := mdTemplates()
	if err != nil {
		return err
	}
	if err := t.ExecuteTemplate(w, name, data); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	return nil
}

// mismatchHeading introduces the judged settings that differ.
const mismatchHeading = "settings that change results differ between base and head; compared anyway as asked, so the deltas may come from the settings rather than the model:"

// RenderComment writes the PR comment: the hidden marker, the models, a
// headline table per test, per-group tables and movers in collapsed
// sections, the settings (any judged mismatch flagged at the top) and how
// many records were paired.
func RenderComment(w io.Writer, c Comment) error {
	if len(c.Tests) == 0 {
		return fmt.Errorf("render comment: no comparisons")
	}
	return executeMD(w, "comparison", mdView(c))
}

func mdView(c Comment) mdComparison {
	return mdComparison{view: newView(c, style{md: true}), MismatchHeading: upperFirst(mismatchHeading)}
}

// mdComparison is what the comparison template reads.
type mdComparison struct {
	view
	MismatchHeading string
}

// RenderSummary writes the same content for the GitHub job summary (and
// `compare --markdown`), without the hidden marker.
func RenderSummary(w io.Writer, c Comment) error {
	if len(c.Tests) == 0 {
		return fmt.Errorf("render summary: no comparisons")
	}
	v := mdView(c)
	v.Marker = ""
	return executeMD(w, "comparison", v)
}

// RenderText writes the same content as aligned plain text for a terminal.
func RenderText(w io.Writer, c Comment) error {
	if len(c.Tests) == 0 {
		return fmt.Errorf("render text: no comparisons")
	}
	v := newView(c, style{})
	p := &printer{w: w}
	p.line(v.Title)
	p.line("head: " + modelLabels(v.Head))
	p.line("base: " + modelLabels(v.Base))
	for _, d := range v.Data {
		p.line(d)
	}
	if v.Verdict != "" {
		p.line(v.Verdict)
	}
	for _, g := range v.Gate {
		p.line(g)
	}
	if len(v.Mismatch) > 0 {
		p.line("")
		p.line("WARNING: " + mismatchHeading)
		for _, s := range v.Mismatch {
			p.line("  - " + s)
		}
	}
	for _, f := range v.Flags {
		p.line("")
		p.line("WARNING: report server: " + f)
	}
	for _, n := range v.Notes {
		p.line("")
		p.line("note: " + n)
	}
	p.line("")
	p.table(v.Headline, "")
	p.line("")
	for _, s := range v.Paired {
		p.line(s)
	}
	for _, sec := range v.Sections {
		p.line("")
		p.line(sec.Summary)
		for _, l := range sec.Lines {
			p.line("  " + l)
		}
		for i, t := range sec.Tables {
			if i > 0 || len(sec.Lines) > 0 {
				p.line("")
			}
			if t.Title != "" {
				p.line("  " + t.Title)
			}
			p.table(t, "  ")
		}
		for _, l := range sec.After {
			p.line("  " + l)
		}
	}
	for _, l := range v.Links {
		p.line("")
		p.line(l.Text + ": " + l.URL)
	}
	p.line("")
	p.line(v.Legend)
	p.line(v.Footer)
	return p.err
}

func modelLabels(ms []modelRef) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.Label
	}
	return strings.Join(parts, ", ")
}

// printer writes text and keeps the first error, so a renderer checks once.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) line(s string) {
	if p.err == nil {
		_, p.err = io.WriteString(p.w, s+"\n")
	}
}

// table aligns columns with two spaces between them, numbers to the right.
func (p *printer) table(t table, indent string) {
	if p.err != nil {
		return
	}
	widths := make([]int, len(t.Head))
	rows := append([][]string{t.Head}, t.Rows...)
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], runeLen(c))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		b.WriteString(indent)
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-runeLen(c))
			switch {
			case i < len(t.Right) && t.Right[i]:
				b.WriteString(pad + c)
			case i == len(r)-1:
				b.WriteString(c)
			default:
				b.WriteString(c + pad)
			}
			if i < len(r)-1 {
				b.WriteString("  ")
			}
		}
		p.line(strings.TrimRight(b.String(), " "))
	}
}

func runeLen(s string) int { return len([]rune(s)) }
