package fresh

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
)

// byteModel is the bigram test model with TokenBytes: its tokens are
// bytes, so a token's text is that one byte.
type byteModel struct {
	*testmodel.Bigram
	calls int // Score calls
}

func (m *byteModel) TokenBytes(id int32) ([]byte, error) {
	if id < 0 || id > 255 {
		return nil, fmt.Errorf("token %d is not a byte", id)
	}
	return []byte{byte(id)}, nil
}

func (m *byteModel) Score(ctx context.Context, reqs []runner.Request) ([]runner.Result, error) {
	m.calls++
	return m.Bigram.Score(ctx, reqs)
}

func newByteModel(seed int64) *byteModel { return &byteModel{Bigram: testmodel.RandomBigram(seed)} }

// expectedBits computes a document's bits straight from the bigram table:
// every byte given the one before it, the first given BOS or not scored.
func expectedBits(m *testmodel.Bigram, text string, addBOS bool) (bits float64, bytes, tokens int) {
	prev := testmodel.BOS
	start := 0
	if !addBOS {
		prev, start = int32(text[0]), 1
	}
	for i := start; i < len(text); i++ {
		bits -= m.LogProb(prev, int32(text[i])) / math.Ln2
		prev = int32(text[i])
		tokens++
	}
	return bits, len(text) - start, tokens
}

// scoreAll runs Score and collects the records.
func scoreAll(t *testing.T, m runner.Model, docs []Document, opt ScoreOptions) []runfile.Doc {
	t.Helper()
	var recs []runfile.Doc
	if err := Score(context.Background(), m, docs, opt, func(d runfile.Doc) error {
		recs = append(recs, d)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return recs
}

func relErr(got, want float64) float64 { return math.Abs(got-want) / math.Abs(want) }

func TestBitsMatchBigramArithmetic(t *testing.T) {
	t.Parallel()
	m := newByteModel(3)
	// Long documents (many windows of 64) with multi-byte text, and short ones.
	docs := append(GenerateDocs(11, 12, 300, 3000), Document{ID: "one-char", Text: "é"}, Document{ID: "x", Text: "xy"})
	for _, addBOS := range []bool{true, false} {
		recs := scoreAll(t, m, docs, ScoreOptions{Window: 64, Stride: 32, AddBOS: addBOS, BOS: testmodel.BOS, BatchTokens: 500})
		if len(recs) != len(docs) {
			t.Fatalf("addBOS=%v: %d records for %d documents", addBOS, len(recs), len(docs))
		}
		var totalBits float64
		var totalBytes int
		multiWindow := 0
		for i, r := range recs {
			d := docs[i]
			bits, bytes, tokens := expectedBits(m.Bigram, d.Text, addBOS)
			if r.ID != d.ID || r.Bytes != bytes || r.Tokens != tokens || r.TextBytes != len(d.Text) || r.FirstUnscored == addBOS {
				t.Errorf("addBOS=%v %s: record %+v, want bytes %d tokens %d", addBOS, d.ID, r, bytes, tokens)
			}
			if tokens > 0 && relErr(r.Bits, bits) > 1e-9 {
				t.Errorf("addBOS=%v %s: bits %.12g, arithmetic %.12g", addBOS, d.ID, r.Bits, bits)
			}
			if r.Windows > 3 {
				multiWindow++
			}
			totalBits += bits
			totalBytes += bytes
		}
		if multiWindow < 5 {
			t.Errorf("only %d documents span more than 3 windows: the test does not exercise sliding", multiWindow)
		}
		s := runfile.SummarizeFresh(recs)
		if want := totalBits / float64(totalBytes); relErr(s.BPB, want) > 1e-9 {
			t.Errorf("addBOS=%v: bpb %.12g, arithmetic %.12g", addBOS, s.BPB, want)
		}
	}
}

func TestBigramResultsIgnoreWindowsAndPacking(t *testing.T) {
	t.Parallel()
	// A bigram model sees one token of context, so the packing may not
	// change a single bit, nor the windows anything but the rounding: a
	// document's bits are its windows' sums added (runfile.SpanBits).
	m := newByteModel(5)
	docs := GenerateDocs(7, 40, 50, 5000)
	base := scoreAll(t, m, docs, ScoreOptions{Window: 2048, Stride: 1024, AddBOS: true, BOS: testmodel.BOS})
	for _, opt := range []ScoreOptions{
		{Window: 2, Stride: 1},
		{Window: 16, Stride: 15},
		{Window: 100, Stride: 7},
		{Window: 512, Stride: 256, BatchTokens: 1}, // one document per call
		{Window: 4096, Stride: 2048, BatchTokens: 1 << 30},
		{Window: 2048, Stride: 1024, BatchTokens: 1}, // the same windows, other packings: every bit
		{Window: 2048, Stride: 1024, BatchTokens: 1 << 30},
	} {
		opt.AddBOS, opt.BOS = true, testmodel.BOS
		m.calls = 0
		got := scoreAll(t, m, docs, opt)
		for i := range base {
			b, g := base[i], got[i]
			same := g.Bits == b.Bits
			if opt.Window != 2048 {
				same = relErr(g.Bits, b.Bits) < 1e-12
			}
			if !same || g.Bytes != b.Bytes || g.Tokens != b.Tokens || g.ID != b.ID || g.Bits != runfile.SpanBits(g.Spans) {
				t.Errorf("window %d stride %d batch %d: %s = %+v, want %+v", opt.Window, opt.Stride, opt.BatchTokens, b.ID, g, b)
				break
			}
		}
		if opt.BatchTokens == 1 && m.calls != len(docs) {
			t.Errorf("batch of 1 token: %d Score calls for %d documents, want one each", m.calls, len(docs))
		}
		if opt.BatchTokens == 1<<30 && m.calls != 1 {
			t.Errorf("unbounded batch: %d Score calls, want 1", m.calls)
		}
	}
}

func TestPlan(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n, window, stride int
		want              []span
	}{
		{5000, 2048, 1024, []span{{0, 1, 2048}, {1024, 2048, 3072}, {2048, 3072, 4096}, {3072, 4096, 5000}}},
		{2048, 2048, 1024, []span{{0, 1, 2048}}},
		{2049, 2048, 1024, []span{{0, 1, 2048}, {1024, 2048, 2049}}},
		{1, 2048, 1024, nil},
		{2, 2048, 1024, []span{{0, 1, 2}}},
		{10, 4, 3, []span{{0, 1, 4}, {3, 4, 7}, {6, 7, 10}}},
		{7, 4, 1, []span{{0, 1, 4}, {1, 4, 5}, {2, 5, 6}, {3, 6, 7}}},
	}
	for _, tt := range tests {
		got := plan(tt.n, tt.window, tt.stride)
		if len(got) != len(tt.want) {
			t.Errorf("plan(%d, %d, %d) = %v, want %v", tt.n, tt.window, tt.stride, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("plan(%d, %d, %d) = %v, want %v", tt.n, tt.window, tt.stride, got, tt.want)
				break
			}
		}
		if err := checkCoverage(tt.n, tt.window, got); err != nil {
			t.Errorf("plan(%d, %d, %d) fails its own check: %v", tt.n, tt.window, tt.stride, err)
		}
	}
	// Every window and stride that validate covers every length.
	for window := 2; window <= 9; window++ {
		for stride := 1; stride < window; stride++ {
			for n := 1; n <= 40; n++ {
				if err := checkCoverage(n, window, plan(n, window, stride)); err != nil {
					t.Fatalf("window %d stride %d n %d: %v", window, stride, n, err)
				}
			}
		}
	}
}

func TestCheckCoverageCatchesBrokenWindows(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		spans []span
		want  string
	}{
		{"twice", []span{{0, 1, 6}, {4, 5, 10}}, "token 5 of 10 is scored 2 times"},
		{"gap", []span{{0, 1, 5}, {4, 6, 10}}, "token 5 of 10 is scored 0 times"},
		{"short", []span{{0, 1, 6}, {4, 6, 9}}, "token 9 of 10 is scored 0 times"},
		{"no context", []span{{0, 1, 5}, {5, 5, 10}}, "window 1 [5, 10) scoring [5, 10) is malformed"},
		{"too long", []span{{0, 1, 10}}, "window 0 [0, 10) scoring [1, 10) is malformed"},
		{"past the end", []span{{0, 1, 6}, {4, 6, 11}}, "malformed"},
		{"first token", []span{{0, 0, 6}}, "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkCoverage(10, 6, tt.spans)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("checkCoverage = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestValidateWindow(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		window, stride int
		ok             bool
	}{
		{2048, 1024, true}, {2, 1, true}, {1, 1, false}, {8, 8, false}, {8, 0, false}, {8, 9, false},
	} {
		if err := validateWindow(tt.window, tt.stride); (err == nil) != tt.ok {
			t.Errorf("validateWindow(%d, %d) = %v, want ok=%v", tt.window, tt.stride, err, tt.ok)
		}
	}
}

// pieceModel gives chosen pieces for the first token, as a SentencePiece
// (space prefix) or BPE tokenizer would.
type pieceModel struct {
	*byteModel
	piece       []byte
	spacePrefix bool
}

func (m pieceModel) TokenBytes(int32) ([]byte, error) { return m.piece, nil }

func (m pieceModel) Info() runner.Info {
	info := m.byteModel.Info()
	info.AddSpacePrefix = m.spacePrefix
	return info
}

func TestFirstTokenBytes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text        string
		piece       string
		spacePrefix bool
		want        int
		wantErr     string
	}{
		{"Hello world", "Hello", false, 5, ""},
		{"Hello world", "H", false, 1, ""},
		{" Hello", " ", false, 1, ""}, // byte-level BPE: a leading space is text
		{"Hello world", "Help", false, 0, `reads "Help"`},
		{"Hello world", "", false, 0, `reads ""`},
		{"Hello world", " Hello", false, 0, `reads " Hello"`}, // no dummy prefix: the space would be text
		// SentencePiece: the dummy prefix is not in the text.
		{"Hello world", " Hello", true, 5, ""},
		{"1 apple", " ", true, 0, ""}, // a lone "▁" before a digit covers nothing
		{"\nnext", " ", true, 0, ""},  // ... before a newline
		{"日本", " ", true, 0, ""},      // ... before CJK
		{" Hello", " ", true, 0, ""},  // the "▁" is the prefix, the text's space comes next
		{" Hello", "  ", true, 1, ""}, // "▁▁": the prefix and the text's space
		{"Hello", "Hello", true, 0, "should start with one"},
	}
	for _, tt := range tests {
		d := &Document{ID: "d", Text: tt.text}
		got, err := firstTokenBytes(pieceModel{newByteModel(1), []byte(tt.piece), tt.spacePrefix}, d, 7)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "document d") {
				t.Errorf("text %q piece %q prefix %v: %v, want an error naming document d containing %q", tt.text, tt.piece, tt.spacePrefix, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("text %q piece %q prefix %v: %d, %v; want %d", tt.text, tt.piece, tt.spacePrefix, got, err, tt.want)
		}
	}
	// A model that cannot tell token bytes cannot score without BOS.
	_, err := firstTokenBytes(testmodel.RandomBigram(1), &Document{ID: "d", Text: "Hello"}, 7)
	if err == nil || !strings.Contains(err.Error(), "--add-bos yes") {
		t.Errorf("model without TokenBytes: %v", err)
	}
}

// silentModel gives no tokens for whitespace, as some SentencePiece
// configurations do, and bytes otherwise.
type silentModel struct{ *byteModel }

func (m silentModel) Tokenize(s string) ([]int32, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	return m.byteModel.Tokenize(s)
}

// A document the tokenizer gives no tokens is scored, not a stop of the
// whole run: from BOS nothing is scored and all its bytes count; without
// BOS there is no first token to leave out.
func TestScoreNoTokens(t *testing.T) {
	t.Parallel()
	m := silentModel{newByteModel(3)}
	docs := []Document{{ID: "a", Text: "ab"}, {ID: "ws", Text: " \n\t "}, {ID: "c", Text: "cd"}}
	for _, addBOS := range []bool{true, false} {
		var got []runfile.Doc
		err := Score(context.Background(), m, docs, ScoreOptions{Window: 8, Stride: 4, AddBOS: addBOS, BOS: testmodel.BOS}, func(d runfile.Doc) error {
			got = append(got, d)
			return nil
		})
		if err != nil {
			t.Fatalf("addBOS %v: %v", addBOS, err)
		}
		if len(got) != 3 {
			t.Fatalf("addBOS %v: %d records, want 3", addBOS, len(got))
		}
		ws := got[1]
		if ws.ID != "ws" || ws.Tokens != 0 || ws.Bits != 0 || ws.Bytes != 4 || ws.TextBytes != 4 || ws.Windows != 0 {
			t.Errorf("addBOS %v: whitespace document %+v, want 0 tokens, 0 bits, 4 bytes, no windows", addBOS, ws)
		}
		for _, i := range []int{0, 2} {
			bits, nbytes, tokens := expectedBits(m.Bigram, docs[i].Text, addBOS)
			if d := got[i]; math.Abs(d.Bits-bits) > 1e-9 || d.Bytes != nbytes || d.Tokens != tokens {
				t.Errorf("addBOS %v: %s %+v, want bits %v bytes %d tokens %d", addBOS, d.ID, d, bits, nbytes, tokens)
			}
		}
	}
}

// badModel returns broken results.
type badModel struct {
	*byteModel
	mode string
}

func (m badModel) Score(ctx context.Context, reqs []runner.Request) ([]runner.Result, error) {
	res, err := m.byteModel.Score(ctx, reqs)
	switch m.mode {
	case "error":
		return nil, errors.New("engine failed")
	case "short":
		return res[:len(res)-1], err
	case "nan":
		res[0][0][0] = math.NaN()
	case "positive":
		res[0][0][0] = 0.5
	case "shape":
		res[0][0] = res[0][0][1:]
	}
	return res, err
}

func TestScoreRejectsBrokenEngines(t *testing.T) {
	t.Parallel()
	docs := []Document{{ID: "a", Text: "some text"}, {ID: "b", Text: "more text"}}
	for mode, want := range map[string]string{
		"error":    "engine failed",
		"short":    "3 results for 4 requests",
		"nan":      "document a: token 1 has log-probability NaN",
		"positive": "log-probability 0.5",
		"shape":    "document a window 0: engine returned the wrong shape",
	} {
		err := Score(context.Background(), badModel{newByteModel(1), mode}, docs, ScoreOptions{Window: 8, Stride: 4, AddBOS: true, BOS: testmodel.BOS}, func(runfile.Doc) error { return nil })
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error containing %q", mode, err, want)
		}
	}
}
