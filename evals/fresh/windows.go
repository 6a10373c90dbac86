package fresh

import "fmt"

// The default window and stride (--window, --stride, the Action's inputs):
// a later window scores its last 1,024 tokens with at least 1,024 before
// them as context.
const (
	DefaultWindow = 2048
	DefaultStride = 1024
)

// span is one window over a document's token sequence: seq[Begin:End] is
// evaluated and positions [From, End) are scored, each given everything
// before it in the window as context.
type span struct {
	Begin, From, End int
}

// plan lays windows of at most window tokens over a sequence of n tokens,
// each starting stride after the last. The first window scores all its
// tokens but the very first (it has no context); each later window scores
// only the tokens past the previous window's end, the rest is context.
// With window 2048 and stride 1024 a later window scores its last 1024.
func plan(n, window, stride int) []span {
	var spans []span
	scored := 1 // position 0 has nothing before it
	for begin := 0; scored < n; begin += stride {
		end := min(begin+window, n)
		if end > scored {
			spans = append(spans, span{Begin: begin, From: scored, End: end})
			scored = end
		}
	}
	return spans
}

// checkCoverage asserts that spans score every position 1..n-1 of a
// sequence of n tokens exactly once, and that each span fits the window
// and gives its first scored token some context. Scoring depends on it.
func checkCoverage(n, window int, spans []span) error {
	count := make([]int, n)
	for i, s := range spans {
		if s.Begin < 0 || s.From <= s.Begin || s.End <= s.From || s.End > n || s.End-s.Begin > window {
			return fmt.Errorf("window %d [%d, %d) scoring [%d, %d) is malformed for %d tokens and a window of %d", i, s.Begin, s.End, s.From, s.End, n, window)
		}
		for p := s.From; p < s.End; p++ {
			count[p]++
		}
	}
	for p := 1; p < n; p++ {
		if count[p] != 1 {
			return fmt.Errorf("token %d of %d is scored %d times, want exactly once", p, n, count[p])
		}
	}
	return nil
}

// validateWindow checks --window and --stride: windows must overlap by at
// least one token, or the first new token of a window has no context.
func validateWindow(window, stride int) error {
	switch {
	case window < 2:
		return fmt.Errorf("window %d: want at least 2 tokens", window)
	case stride < 1 || stride >= window:
		return fmt.Errorf("stride %d: want 1 <= stride < window (%d), so windows overlap", stride, window)
	}
	return nil
}

// fitHint names a whole setting that fits a model of context length n: the
// window its context, the stride kept while it stays below the window, or
// else half the window, as the defaults have it (a window alone would be
// refused for its stride).
func fitHint(n, stride int) string {
	if n < 2 {
		return "no window fits: a window needs at least 2 tokens"
	}
	if stride >= n {
		stride = n * DefaultStride / DefaultWindow
	}
	return fmt.Sprintf("use --window %d --stride %d", n, max(stride, 1))
}
