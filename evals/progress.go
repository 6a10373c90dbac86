package evals

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// Progress reports how far a run has gone: on a terminal a bar redrawn in
// place, otherwise (CI logs) a plain line every Every. It is not safe for
// concurrent use; the scoring loop calls it from one goroutine.
type Progress struct {
	w        io.Writer
	label    string
	total    int
	terminal bool
	every    time.Duration
	now      func() time.Time

	start     time.Time
	last      time.Time
	items     int
	tokens    int
	skipped   int // items a resumed run had done before
	totalWork int // see ProgressOptions.TotalWork
	work      int
	lastWidth int
}

// ProgressOptions configure a Progress. Terminal picks the redrawn bar;
// IsTerminal tells whether a writer is one.
type ProgressOptions struct {
	Label    string // e.g. "docs" or "items"
	Terminal bool
	Every    time.Duration    // plain lines: at most one per Every (default 10s)
	Now      func() time.Time // default time.Now
	// TotalWork, when set, is the whole job in a unit that tracks its time
	// better than items do (bytes of text: a long document takes longer
	// than a short one); the ETA then comes from the work left, and
	// AddWork reports it.
	TotalWork int
}

// barRedraw bounds how often a terminal bar is redrawn.
const barRedraw = 200 * time.Millisecond

// etaAfter is the part of a job done before progress gives an ETA.
const etaAfter = 0.02

// NewProgress starts reporting on w for total items (0: unknown). A nil w
// reports nothing.
func NewProgress(w io.Writer, total int, opt ProgressOptions) *Progress {
	if w == nil {
		w = io.Discard
	}
	p := &Progress{w: w, label: opt.Label, total: total, terminal: opt.Terminal, every: opt.Every, now: opt.Now, totalWork: opt.TotalWork}
	if p.label == "" {
		p.label = "items"
	}
	if p.every <= 0 {
		p.every = 10 * time.Second
	}
	if p.now == nil {
		p.now = time.Now
	}
	p.start = p.now()
	p.last = p.start
	return p
}

// IsTerminal reports whether w is a terminal, so progress can be a bar.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Skip takes items (and their work) an earlier, resumed run already did out
// of the total, so the bar and the ETA count only what is left; the line
// says how many were done before.
func (p *Progress) Skip(items, work int) {
	p.total = max(p.total-items, 0)
	p.totalWork = max(p.totalWork-work, 0)
	p.skipped += items
}

// Add records items finished and the tokens they scored, and reports when
// it is time to.
func (p *Progress) Add(items, tokens int) { p.AddWork(items, tokens, 0) }

// AddWork is Add with the work the items took (see TotalWork).
func (p *Progress) AddWork(items, tokens, work int) {
	p.items += items
	p.tokens += tokens
	p.work += work
	now := p.now()
	gap := p.every
	if p.terminal {
		gap = barRedraw
	}
	if now.Sub(p.last) < gap && !(p.terminal && p.items == p.total) {
		return
	}
	p.last = now
	p.report(now)
}

// Done draws the final state and ends the bar's line.
func (p *Progress) Done() {
	p.report(p.now())
	if p.terminal {
		fmt.Fprintln(p.w)
	}
}

func (p *Progress) report(now time.Time) {
	line := p.line(now)
	if !p.terminal {
		fmt.Fprintln(p.w, line)
		return
	}
	// Pad over the previous line's tail, which may have been longer.
	pad := ""
	if n := p.lastWidth - len(line); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	p.lastWidth = len(line)
	fmt.Fprintf(p.w, "\r%s%s", line, pad)
}

func (p *Progress) line(now time.Time) string {
	elapsed := now.Sub(p.start)
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(p.tokens) / s
	}
	// No ETA before etaAfter of the job is done: the first records carry
	// the start (loading, the first packed call), and extrapolating one of
	// 2,000 items said 26h22m for a job of minutes.
	eta := "?"
	switch {
	case p.totalWork > 0 && float64(p.work) >= etaAfter*float64(p.totalWork) && p.work > 0 && p.work <= p.totalWork:
		eta = formatDuration(time.Duration(float64(elapsed) * float64(p.totalWork-p.work) / float64(p.work)))
	case p.totalWork == 0 && p.total > 0 && float64(p.items) >= etaAfter*float64(p.total) && p.items > 0 && p.items <= p.total:
		eta = formatDuration(time.Duration(float64(elapsed) * float64(p.total-p.items) / float64(p.items)))
	}
	count := fmt.Sprintf("%d %s", p.items, p.label)
	if p.total > 0 {
		count = fmt.Sprintf("%d/%d %s", p.items, p.total, p.label)
	}
	if p.skipped > 0 {
		count += fmt.Sprintf(" (+%d before)", p.skipped)
	}
	stats := fmt.Sprintf("%s, %.0f tokens/s, elapsed %s, ETA %s", count, rate, formatDuration(elapsed), eta)
	if !p.terminal {
		return "progress: " + stats
	}
	return bar(p.items, p.total, 30) + " " + stats
}

// bar draws [#####.....] for done of total; an unknown total draws none.
func bar(done, total, width int) string {
	if total <= 0 {
		return ""
	}
	n := min(width*done/total, width)
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}

// formatDuration prints whole seconds: 1h02m03s, 4m05s, 6s.
func formatDuration(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	switch {
	case h > 0:
		return fmt.Sprintf("%dh%02dm%02ds", h, m, s)
	case m > 0:
		return fmt.Sprintf("%dm%02ds", m, s)
	}
	return fmt.Sprintf("%ds", s)
}
