package evals

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// clock is a fake clock the test moves by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time       { return c.t }
func (c *clock) step(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock                { return &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func TestProgressPlainLines(t *testing.T) {
	t.Parallel()
	c := newClock()
	var buf bytes.Buffer
	p := NewProgress(&buf, 10, ProgressOptions{Label: "docs", Every: 5 * time.Second, Now: c.now})
	c.step(2 * time.Second)
	p.Add(1, 100) // too soon: no line
	c.step(3 * time.Second)
	p.Add(1, 100) // 5s: a line
	c.step(time.Second)
	p.Add(3, 300) // too soon again
	c.step(4 * time.Second)
	p.Done()
	want := "progress: 2/10 docs, 40 tokens/s, elapsed 5s, ETA 20s\n" +
		"progress: 5/10 docs, 50 tokens/s, elapsed 10s, ETA 10s\n"
	if buf.String() != want {
		t.Errorf("plain progress:\n%q\nwant\n%q", buf.String(), want)
	}
	if strings.Contains(buf.String(), "\r") {
		t.Error("plain progress redraws with \\r")
	}
}

func TestProgressTerminalBar(t *testing.T) {
	t.Parallel()
	c := newClock()
	var buf bytes.Buffer
	p := NewProgress(&buf, 4, ProgressOptions{Label: "docs", Terminal: true, Now: c.now})
	p.Skip(0, 0)
	c.step(time.Second)
	p.Add(1, 50)
	c.step(10 * time.Millisecond)
	p.Add(1, 50) // inside the redraw gap: not drawn
	c.step(time.Second)
	p.Add(2, 100) // the last item is always drawn
	p.Done()
	out := buf.String()
	frames := strings.Split(out, "\r")[1:]
	if len(frames) != 3 {
		t.Fatalf("terminal progress drew %d frames, want 3: %q", len(frames), out)
	}
	if want := "[#######.......................] 1/4 docs, 50 tokens/s, elapsed 1s, ETA 3s"; frames[0] != want {
		t.Errorf("first frame %q, want %q", frames[0], want)
	}
	if !strings.HasPrefix(frames[1], "[##############################] 4/4 docs") {
		t.Errorf("second frame %q, want a full bar", frames[1])
	}
	if !strings.HasSuffix(out, "\n") {
		t.Error("Done does not end the bar's line")
	}
}

func TestProgressSkipAndUnknownTotal(t *testing.T) {
	t.Parallel()
	c := newClock()
	var buf bytes.Buffer
	p := NewProgress(&buf, 10, ProgressOptions{Every: time.Second, Now: c.now})
	p.Skip(6, 0) // a resumed run: 6 were done before
	c.step(2 * time.Second)
	p.Add(2, 10)
	if want := "progress: 2/4 items (+6 before), 5 tokens/s, elapsed 2s, ETA 2s\n"; buf.String() != want {
		t.Errorf("after Skip: %q, want %q", buf.String(), want)
	}
	buf.Reset()
	p = NewProgress(&buf, 0, ProgressOptions{Now: c.now})
	p.Done()
	if want := "progress: 0 items, 0 tokens/s, elapsed 0s, ETA ?\n"; buf.String() != want {
		t.Errorf("unknown total: %q, want %q", buf.String(), want)
	}
}

func TestFormatDuration(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		0:                "0s",
		59 * time.Second: "59s",
		65 * time.Second: "1m05s",
		time.Hour + 2*time.Minute + 3*time.Second: "1h02m03s",
	} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestIsTerminal(t *testing.T) {
	t.Parallel()
	if IsTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is a terminal")
	}
}

// With TotalWork the ETA follows the work left, not the items: one long
// document done of two short ones left is most of the job.
func TestProgressETAFollowsWork(t *testing.T) {
	t.Parallel()
	c := newClock()
	var buf bytes.Buffer
	p := NewProgress(&buf, 3, ProgressOptions{Label: "docs", Every: time.Second, Now: c.now, TotalWork: 1000})
	c.step(8 * time.Second)
	p.AddWork(1, 80, 800)
	if want := "progress: 1/3 docs, 10 tokens/s, elapsed 8s, ETA 2s\n"; buf.String() != want {
		t.Errorf("%q, want %q (by items the ETA would be 16s)", buf.String(), want)
	}
	buf.Reset()
	p = NewProgress(&buf, 3, ProgressOptions{Label: "docs", Every: time.Second, Now: c.now, TotalWork: 1000})
	p.Skip(1, 800)
	c.step(time.Second)
	p.AddWork(1, 10, 100)
	if want := "progress: 1/2 docs (+1 before), 10 tokens/s, elapsed 1s, ETA 1s\n"; buf.String() != want {
		t.Errorf("resumed: %q, want %q", buf.String(), want)
	}
}

// The first of 2,000 items carries the start (loading, the first packed
// call): no ETA until 2% is done, then one from everything so far (issue
// 40: the first line said 26h22m).
func TestProgressNoETAFromTheFirstItems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		items, work, totalWork int
		want                   string
	}{
		{1, 0, 0, "progress: 1/2000 items, 1 tokens/s, elapsed 47s, ETA ?\n"},
		{39, 0, 0, "progress: 39/2000 items, 1 tokens/s, elapsed 47s, ETA ?\n"},
		{40, 0, 0, "progress: 40/2000 items, 1 tokens/s, elapsed 47s, ETA 38m23s\n"},
		{1, 10, 1000, "progress: 1/2000 items, 1 tokens/s, elapsed 47s, ETA ?\n"},
		{1, 20, 1000, "progress: 1/2000 items, 1 tokens/s, elapsed 47s, ETA 38m23s\n"},
	} {
		c := newClock()
		var buf bytes.Buffer
		p := NewProgress(&buf, 2000, ProgressOptions{Every: time.Second, Now: c.now, TotalWork: tc.totalWork})
		c.step(47 * time.Second)
		p.AddWork(tc.items, 47, tc.work)
		if buf.String() != tc.want {
			t.Errorf("%d items, work %d of %d: %q, want %q", tc.items, tc.work, tc.totalWork, buf.String(), tc.want)
		}
	}
}
