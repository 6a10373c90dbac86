package hub

import (
	"fmt"
	"io"
	"time"
)

// progress prints a plain line every few seconds while a download runs (a
// line, not a redrawn bar, so CI logs stay readable) and one when it ends.
type progress struct {
	w           io.Writer
	name        string
	total, done int64
	start       int64 // bytes already there when this transfer began
	began, last time.Time
	now         func() time.Time
}

const (
	progressEvery = 2 * time.Second
	progressMin   = 1 << 20 // smaller files (configs, tokenizers) download silently
)

func newProgress(w io.Writer, name string, total, have int64, now func() time.Time) *progress {
	t := now()
	p := &progress{w: w, name: name, total: total, done: have, start: have, began: t, last: t, now: now}
	if have > 0 {
		fmt.Fprintf(w, "download %s: resuming at %s of %s\n", name, mib(have), mib(total))
	} else {
		fmt.Fprintf(w, "download %s: %s\n", name, mib(total))
	}
	return p
}

func (p *progress) Write(b []byte) (int, error) {
	p.done += int64(len(b))
	if t := p.now(); t.Sub(p.last) >= progressEvery {
		p.last = t
		fmt.Fprintf(p.w, "download %s: %3.0f%% %s of %s, %s/s\n", p.name, p.percent(), mib(p.done), mib(p.total), mib(p.rate(t)))
	}
	return len(b), nil
}

func (p *progress) finish() {
	t := p.now()
	fmt.Fprintf(p.w, "download %s: %3.0f%% %s of %s in %s\n", p.name, p.percent(), mib(p.done), mib(p.total), t.Sub(p.began).Round(time.Second))
}

func (p *progress) percent() float64 {
	if p.total <= 0 {
		return 100
	}
	return 100 * float64(p.done) / float64(p.total)
}

func (p *progress) rate(t time.Time) int64 {
	s := t.Sub(p.began).Seconds()
	if s <= 0 {
		return 0
	}
	return int64(float64(p.done-p.start) / s)
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
