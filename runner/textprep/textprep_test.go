package textprep

import (
	"context"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/ggufspec/tokspec"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
	"github.com/udgamlabs/udgam-ci/runner/textprep/hfprep"
)

// byteTok tokenizes text into its bytes and gives each byte as its piece,
// with a space prefix when asked (as llama.cpp's SentencePiece does).
type byteTok struct {
	spacePrefix bool
	seen        []string // texts given to Tokenize
}

func (b *byteTok) Tokenize(s string) ([]int32, error) {
	b.seen = append(b.seen, s)
	if b.spacePrefix {
		s = " " + s
	}
	ids := make([]int32, len(s))
	for i := range ids {
		ids[i] = int32(s[i])
	}
	return ids, nil
}

func (b *byteTok) TokenBytes(id int32) ([]byte, error) {
	if id >= 1000 {
		return nil, nil // an added token: llama.cpp shows control tokens as nothing
	}
	return []byte{byte(id)}, nil
}

func TestLlamaOwnRefusesControlLiterals(t *testing.T) {
	t.Parallel()
	inner := &byteTok{}
	tok, err := wrap(inner, runnerSpecNone, runner.Info{ControlTokens: []string{"<|endoftext|>", "<s>", "</s>"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Record(); got != (runfile.TextPrep{By: runfile.PrepLlama}) {
		t.Errorf("record %+v, want by llama.cpp", got)
	}
	for _, tt := range []struct {
		text, lit string
		at        int
	}{
		{"a <s> b", "<s>", 2},
		{"x</s>", "</s>", 1},
		{"end<|endoftext|>", "<|endoftext|>", 3},
	} {
		_, err := tok.Tokenize(tt.text)
		if err == nil || !strings.Contains(err.Error(), `"`+tt.lit+`"`) || !strings.Contains(err.Error(), "model convert") {
			t.Errorf("%q: %v, want a refusal naming %q", tt.text, err, tt.lit)
		}
		if cerr := tok.CheckText(tt.text); cerr == nil || cerr.Error() != err.Error() {
			t.Errorf("%q: CheckText %v, want the same refusal as Tokenize", tt.text, cerr)
		}
	}
	for _, text := range []string{"a < s > b", "<|endoftext", "plain"} {
		ids, err := tok.Tokenize(text)
		if err != nil || len(ids) != len(text) {
			t.Errorf("%q: %v %v, want its bytes", text, ids, err)
		}
	}
}

var runnerSpecNone = tokspec.Spec{}

// fakePrep stands for hfprep.Prep in these unit tests of the composition:
// "<s>" is added token 1001, and the normalizer composes "e" + U+0301 into
// "é" (NFC's one case used here). The real pre-steps are checked against
// transformers.js in the end-to-end tests.
type fakePrep struct{}

func (fakePrep) Segments(text string) ([]hfprep.Segment, error) {
	var out []hfprep.Segment
	for len(text) > 0 {
		i := strings.Index(text, "<s>")
		if i < 0 {
			i = len(text)
		}
		if i > 0 {
			out = append(out, hfprep.Segment{Text: strings.ReplaceAll(text[:i], "e\u0301", "é")})
		}
		if i == len(text) {
			break
		}
		out = append(out, hfprep.Segment{Text: "<s>", ID: 1001, Added: true})
		text = text[i+3:]
	}
	return out, nil
}

func TestSpecTokenize(t *testing.T) {
	t.Parallel()
	for _, spacePrefix := range []bool{false, true} {
		inner := &byteTok{spacePrefix: spacePrefix}
		tok := &Tokenizer{inner: inner, prep: fakePrep{}, spacePrefix: spacePrefix, user: newLiterals([]string{"[PAD0]"})}
		ids, err := tok.Tokenize("ae\u0301<s>b")
		if err != nil {
			t.Fatal(err)
		}
		// Each plain segment goes to the inner tokenizer on its own,
		// normalized; the added token is its id.
		if want := []string{"aé", "b"}; strings.Join(inner.seen, "|") != strings.Join(want, "|") {
			t.Errorf("prefix %v: inner saw %q, want %q", spacePrefix, inner.seen, want)
		}
		var want []int32
		p := ""
		if spacePrefix {
			p = " "
		}
		for _, c := range []byte(p + "aé") {
			want = append(want, int32(c))
		}
		want = append(want, 1001)
		for _, c := range []byte(p + "b") {
			want = append(want, int32(c))
		}
		if !equal(ids, want) {
			t.Errorf("prefix %v: ids %v, want %v", spacePrefix, ids, want)
		}
		// llama.cpp would match a user-defined token inside plain text:
		// refused, as Hugging Face's tokenizer left it as text.
		if _, err := tok.Tokenize("x [PAD0] y"); err == nil || !strings.Contains(err.Error(), `"[PAD0]"`) {
			t.Errorf("prefix %v: padding literal: %v, want a refusal naming [PAD0]", spacePrefix, err)
		}
	}
}

func TestSpecFirstTokenBytes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		text        string
		spacePrefix bool
		first       int32
		want        int
	}{
		{"abc", false, 'a', 1},
		{"<s>abc", false, 1001, 3},   // an added token covers its literal
		{"e\u0301x", false, 0xC3, 3}, // "é" normalized from 3 bytes: its first byte covers them
		// A byte-level token that ends inside a character the normalizer
		// left alone covers its own bytes, not the whole character.
		{"यह", false, 0xE0, 1},
		{"🦜 parrots", false, 0xF0, 1},
		{"é", false, 0xC3, 1},
		{"<s>🦜", false, 1001, 3},
		{"abc", true, ' ', 0}, // the lone dummy prefix covers nothing
		{"<s>abc", true, 1001, 3},
	} {
		inner := &byteTok{spacePrefix: tt.spacePrefix}
		tok := &Tokenizer{inner: inner, prep: fakePrep{}, spacePrefix: tt.spacePrefix}
		got, err := tok.FirstTokenBytes(tt.text, tt.first)
		if err != nil || got != tt.want {
			t.Errorf("%q prefix %v first %d: %d, %v; want %d", tt.text, tt.spacePrefix, tt.first, got, err, tt.want)
		}
	}
	tok := &Tokenizer{inner: &byteTok{}, prep: fakePrep{}}
	if _, err := tok.FirstTokenBytes("<s>abc", 'x'); err == nil || !strings.Contains(err.Error(), "does not start the text") {
		t.Errorf("wrong first token: %v, want an error", err)
	}
}

func TestDescribeNormalizer(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ raw, want string }{
		{``, ""},
		{`null`, ""},
		{`{"type":"NFC"}`, "NFC"},
		{`{"type":"Sequence","normalizers":[{"type":"NFKC"},{"type":"Lowercase"}]}`, "NFKC+Lowercase"},
	} {
		got, err := describeNormalizer([]byte(tt.raw))
		if err != nil || got != tt.want {
			t.Errorf("%s: %q, %v; want %q", tt.raw, got, err, tt.want)
		}
	}
}

func TestLiterals(t *testing.T) {
	t.Parallel()
	l := newLiterals([]string{"<a>", "<ab>", "x", ""})
	for _, tt := range []struct {
		text, lit string
		at        int
		ok        bool
	}{
		{"zz<ab>", "<ab>", 2, true}, // the longest at a position wins
		{"<a", "", 0, false},
		{"yx", "x", 1, true},
		{"", "", 0, false},
	} {
		lit, at, ok := l.find(tt.text)
		if lit != tt.lit || at != tt.at || ok != tt.ok {
			t.Errorf("%q: %q %d %v, want %q %d %v", tt.text, lit, at, ok, tt.lit, tt.at, tt.ok)
		}
	}
}

func equal(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// runTok gives a run of spaces as one token whose piece llama.cpp shows as
// nothing (as it shows Gemma's "▁▁▁"), other bytes as themselves.
type runTok struct{ byteTok }

func (r *runTok) Tokenize(s string) ([]int32, error) {
	var ids []int32
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && s[j] == ' ' {
			j++
		}
		if j > i {
			ids = append(ids, int32(2000+j-i))
			i = j
			continue
		}
		ids = append(ids, int32(s[i]))
		i++
	}
	return ids, nil
}

func TestFirstTokenBytesEmptyPiece(t *testing.T) {
	t.Parallel()
	for _, prep := range []Prep{nil, fakePrep{}} {
		tok := &Tokenizer{inner: &runTok{}, prep: prep}
		got, err := tok.FirstTokenBytes("   leading", 2003)
		if err != nil || got != 3 {
			t.Errorf("prep %v: %d, %v; want the 3 spaces", prep, got, err)
		}
	}
}

// infoModel is a runner.Model with a chosen description.
type infoModel struct {
	byteTok
	info runner.Info
}

func (m *infoModel) Info() runner.Info { return m.info }
func (m *infoModel) Score(context.Context, []runner.Request) ([]runner.Result, error) {
	return nil, nil
}

func TestWrapModelWithoutRecord(t *testing.T) {
	t.Parallel()
	// A byte-level GGUF that names no pre-tokenizer is refused: llama.cpp
	// would fall back to its default split.
	if _, err := WrapModel(&infoModel{info: runner.Info{TokenizerModel: "gpt2"}}); err == nil || !strings.Contains(err.Error(), "tokenizer.ggml.pre") {
		t.Errorf("no pre-tokenizer: %v, want a refusal naming tokenizer.ggml.pre", err)
	}
	m, err := WrapModel(&infoModel{info: runner.Info{TokenizerModel: "gpt2", TokenizerPre: "smollm", ControlTokens: []string{"<|endoftext|>"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.TextPrep(); got.By != runfile.PrepLlama {
		t.Errorf("text preparation %+v, want llama.cpp's own", got)
	}
	if err := m.CheckText("a<|endoftext|>"); err == nil {
		t.Error("a control token's literal passed the check")
	}
	if ids, err := m.Tokenize("ab"); err != nil || len(ids) != 2 {
		t.Errorf("plain text: %v %v", ids, err)
	}
}

// TestSpacePrefixFirst: Metaspace's prepend_scheme "first" puts a space
// (llama.cpp's "▁") before the segment that starts the text only, and not
// when it starts with a space already; with no BOS, that space covers none
// of the text's bytes.
func TestSpacePrefixFirst(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		text string
		seen []string // what llama.cpp is given
	}{
		{"ab<s>c", []string{" ab", "c"}},
		{" ab<s>c", []string{" ab", "c"}},
		{"<s>ab", []string{"ab"}},
		{"▁ab", []string{"▁ab"}},
	} {
		inner := &byteTok{}
		tok := &Tokenizer{inner: inner, prep: fakePrep{}, prefixFirst: true}
		if _, err := tok.Tokenize(tt.text); err != nil {
			t.Fatal(err)
		}
		if strings.Join(inner.seen, "|") != strings.Join(tt.seen, "|") {
			t.Errorf("%q: llama.cpp given %q, want %q", tt.text, inner.seen, tt.seen)
		}
	}
	tok := &Tokenizer{inner: &byteTok{}, prep: fakePrep{}, prefixFirst: true}
	for _, tt := range []struct {
		text  string
		first int32
		want  int
	}{
		{"abc", ' ', 0},  // the space put first covers nothing
		{" abc", ' ', 1}, // the text's own space
		{"<s>abc", 1001, 3},
	} {
		if got, err := tok.FirstTokenBytes(tt.text, tt.first); err != nil || got != tt.want {
			t.Errorf("%q first %d: %d, %v; want %d", tt.text, tt.first, got, err, tt.want)
		}
	}
}

// TestMissingBytes: text holding a byte the vocabulary has no token for is
// refused, naming it, by Tokenize and by CheckText.
func TestMissingBytes(t *testing.T) {
	t.Parallel()
	tok, err := wrap(&byteTok{}, tokspec.Spec{Source: "tokenizer.json", MissingBytes: []int{4}}, runner.Info{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tok.Tokenize("a\x04b"); err == nil || !strings.Contains(err.Error(), "byte 0x04 at byte 1") {
		t.Errorf("Tokenize: %v, want a refusal naming byte 0x04", err)
	}
	if err := tok.CheckText("a\x04b"); err == nil {
		t.Error("CheckText passed a text holding byte 0x04")
	}
	if ids, err := tok.Tokenize("ab"); err != nil || len(ids) != 2 {
		t.Errorf("plain text: %v %v", ids, err)
	}
}
