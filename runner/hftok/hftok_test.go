package hftok

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func preOf(t *testing.T, js string) preTokenizer {
	t.Helper()
	p, err := parsePreTokenizer(json.RawMessage(js))
	if err != nil {
		t.Fatalf("parse %s: %v", js, err)
	}
	return p
}

func pieceTexts(ps []piece) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.s
	}
	return out
}

func TestPreTokenizers(t *testing.T) {
	t.Parallel()
	split := func(behavior string) string {
		return `{"type":"Split","pattern":{"String":"-"},"behavior":"` + behavior + `","invert":false}`
	}
	cases := []struct {
		name, json, text string
		first            bool
		want             []string
	}{
		// tokenizers' documented example for each SplitDelimiterBehavior.
		{"removed", split("Removed"), "the-final--countdown", true, []string{"the", "final", "countdown"}},
		{"isolated", split("Isolated"), "the-final--countdown", true, []string{"the", "-", "final", "-", "-", "countdown"}},
		{"merged with previous", split("MergedWithPrevious"), "the-final--countdown", true, []string{"the-", "final-", "-", "countdown"}},
		{"merged with next", split("MergedWithNext"), "the-final--countdown", true, []string{"the", "-final", "-", "-countdown"}},
		{"contiguous", split("Contiguous"), "the-final--countdown", true, []string{"the", "-", "final", "--", "countdown"}},
		{"leading and trailing delimiters", split("MergedWithPrevious"), "-a-", true, []string{"-", "a-"}},
		{"invert keeps the matches", `{"type":"Split","pattern":{"Regex":"[A-Za-z]+"},"behavior":"Removed","invert":true}`,
			"Hello, world!", true, []string{"Hello", "world"}},
		{"regex with lookahead", `{"type":"Split","pattern":{"Regex":"\\s+(?!\\S)|\\s+|\\S+"},"behavior":"Isolated","invert":false}`,
			"a   b", true, []string{"a", "  ", " ", "b"}},
		{"digits grouped", `{"type":"Digits","individual_digits":false}`, "Call 123 now 4", true, []string{"Call ", "123", " now ", "4"}},
		{"digits one by one", `{"type":"Digits","individual_digits":true}`, "Call 123", true, []string{"Call ", "1", "2", "3"}},
		{"digits beyond ASCII", `{"type":"Digits","individual_digits":true}`, "x٣½", true, []string{"x", "٣", "½"}},
		{"punctuation", `{"type":"Punctuation"}`, "Hey friend, how are you?!", true, []string{"Hey friend", ",", " how are you", "?", "!"}},
		{"punctuation contiguous", `{"type":"Punctuation","behavior":"Contiguous"}`, "you?!$", true, []string{"you", "?!$"}},
		{"whitespace", `{"type":"Whitespace"}`, "Hey friend, how are you?!", true, []string{"Hey", "friend", ",", "how", "are", "you", "?!"}},
		{"whitespace words are Unicode", `{"type":"Whitespace"}`, "café x_1 naïve—ok", true, []string{"café", "x_1", "naïve", "—", "ok"}},
		{"whitespace split", `{"type":"WhitespaceSplit"}`, "Hey  friend,\thow\u3000x", true, []string{"Hey", "friend,", "how", "x"}},
		{"bert", `{"type":"BertPreTokenizer"}`, "Hey friend, ok?", true, []string{"Hey", "friend", ",", "ok", "?"}},
		{"char delimiter", `{"type":"CharDelimiterSplit","delimiter":"|"}`, "a|b||c", true, []string{"a", "b", "c"}},
		{"byte level", `{"type":"ByteLevel","add_prefix_space":true,"use_regex":true}`, "Hello my friend, how is your day going?", true,
			[]string{"ĠHello", "Ġmy", "Ġfriend", ",", "Ġhow", "Ġis", "Ġyour", "Ġday", "Ġgoing", "?"}},
		{"byte level space runs", `{"type":"ByteLevel","add_prefix_space":false,"use_regex":true}`, "  a\n\nb's", true,
			[]string{"Ġ", "Ġa", "Ċ", "Ċ", "b", "'s"}},
		{"byte level bytes", `{"type":"ByteLevel","add_prefix_space":false,"use_regex":false}`, "é €\x00", true, []string{"Ã©ĠâĤ¬Ā"}},
		{"byte level no prefix when a space leads", `{"type":"ByteLevel","add_prefix_space":true,"use_regex":false}`, " a", true, []string{"Ġa"}},
		{"metaspace always", `{"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":true}`, "Hey   friend", false,
			[]string{"▁Hey", "▁", "▁", "▁friend"}},
		{"metaspace first, at the start", `{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":true}`, "Hey friend", true,
			[]string{"▁Hey", "▁friend"}},
		{"metaspace first, not at the start", `{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":true}`, "Hey friend", false,
			[]string{"Hey", "▁friend"}},
		{"metaspace never, no split", `{"type":"Metaspace","replacement":"▁","prepend_scheme":"never","split":false}`, "Hey friend", true,
			[]string{"Hey▁friend"}},
		{"metaspace legacy add_prefix_space", `{"type":"Metaspace","replacement":"▁","add_prefix_space":true}`, "a b", false,
			[]string{"▁a", "▁b"}},
		{"sequence", `{"type":"Sequence","pretokenizers":[{"type":"WhitespaceSplit"},{"type":"Digits","individual_digits":true}]}`,
			"ab12 c3", true, []string{"ab", "1", "2", "c", "3"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := pieceTexts(preOf(t, c.json).preTokenize([]piece{{s: c.text, first: c.first}}))
			if !slices.Equal(got, c.want) {
				t.Errorf("%q: got %q, want %q", c.text, got, c.want)
			}
		})
	}
}

// tokenizerJSON builds a small tokenizer.json: a BPE model whose vocabulary
// is every character of chars (ids in order), then extra.
func tokenizerJSON(t *testing.T, chars string, extra []string, merges []string, added []map[string]any, normalizer, pre string) []byte {
	t.Helper()
	vocab := map[string]int{}
	for _, r := range chars {
		if _, ok := vocab[string(r)]; !ok {
			vocab[string(r)] = len(vocab)
		}
	}
	for _, e := range extra {
		vocab[e] = len(vocab)
	}
	for _, a := range added {
		if _, ok := a["id"]; !ok {
			a["id"] = len(vocab)
			vocab[a["content"].(string)] = len(vocab)
		}
	}
	if merges == nil {
		merges = []string{}
	}
	doc := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": added,
		"normalizer": json.RawMessage(normalizer), "pre_tokenizer": json.RawMessage(pre),
		"post_processor": nil, "decoder": nil,
		"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": merges, "unk_token": nil},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func added(content string, flags string) map[string]any {
	return map[string]any{"content": content, "special": strings.Contains(flags, "special"),
		"normalized": strings.Contains(flags, "normalized"), "lstrip": strings.Contains(flags, "lstrip"),
		"rstrip": strings.Contains(flags, "rstrip"), "single_word": strings.Contains(flags, "single_word")}
}

func segs(ss []Segment) string {
	var b strings.Builder
	for _, s := range ss {
		if s.Added {
			fmt.Fprintf(&b, "[%q=%d]", s.Text, s.ID)
		} else {
			fmt.Fprintf(&b, "%q", s.Text)
		}
	}
	return b.String()
}

// TestAddedTokens follows tokenizers' own added-vocabulary cases: a
// Lowercase normalizer, tokens matched on raw or normalized text, with
// lstrip, rstrip and single_word.
func TestAddedTokens(t *testing.T) {
	t.Parallel()
	const chars = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ[]<>,-\t\u2000\u25cc\u0330"
	cases := []struct {
		name   string
		tokens []map[string]any
		text   string
		want   string // Segments
		raw    string // SplitAdded, when checked
	}{
		{
			name: "raw and normalized tokens",
			tokens: []map[string]any{added("my", "normalized lstrip rstrip"), added("name", "normalized"),
				added("ony", "normalized single_word"), added("[CLS]", "special"), added("[SEP]", "special")},
			text: "[CLS] My name is Anthony [SEP]",
			want: `["[CLS]"=3][" my "=0]["name"=1]" is anthony "["[SEP]"=4]`,
			raw:  `["[CLS]"=3]" My name is Anthony "["[SEP]"=4]`,
		},
		{
			name:   "single word",
			tokens: []map[string]any{added("<mask>", "normalized single_word")},
			text:   "<mask> My name <mask> A<mask> <mask>ony <mask>",
			want:   `["<mask>"=0]" my name "["<mask>"=0]" a<mask> <mask>ony "["<mask>"=0]`,
		},
		{
			name:   "single word next to punctuation and marks",
			tokens: []map[string]any{added("<mask>", "normalized single_word")},
			text:   "<mask>, <mask>- \u25cc\u0330<mask>",
			want:   `["<mask>"=0]", "["<mask>"=0]"- ◌̰<mask>"`,
		},
		{
			name:   "strip Unicode spaces without overlapping",
			tokens: []map[string]any{added("<mask>", "normalized lstrip rstrip single_word")},
			text:   "Hi <mask> there\t<mask>\t<mask>\u2000",
			want:   `"hi"[" <mask> "=0]"there"["\t<mask>\t"=0]["<mask>\u2000"=0]`,
		},
		{
			name:   "longest match first",
			tokens: []map[string]any{added("<a>", "special"), added("<a><b>", "special"), added("b>", "")},
			text:   "x<a><b>y<a>b>",
			want:   `"x"["<a><b>"=1]"y"["<a>"=0]["b>"=2]`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for i, a := range c.tokens {
				a["id"] = i
			}
			var extra []string
			for _, a := range c.tokens {
				extra = append(extra, a["content"].(string))
			}
			// Added tokens first in the vocabulary, so their ids are 0, 1, ...
			doc := tokenizerJSON(t, "", extra, nil, c.tokens, `{"type":"Lowercase"}`, `null`)
			var m map[string]any
			_ = json.Unmarshal(doc, &m)
			vocab := m["model"].(map[string]any)["vocab"].(map[string]any)
			for _, r := range chars {
				if _, ok := vocab[string(r)]; !ok {
					vocab[string(r)] = len(vocab)
				}
			}
			doc, _ = json.Marshal(m)
			tok, err := Parse(doc)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tok.Segments(c.text)
			if err != nil {
				t.Fatal(err)
			}
			if segs(got) != c.want {
				t.Errorf("Segments(%q)\n got %s\nwant %s", c.text, segs(got), c.want)
			}
			if c.raw != "" {
				if g := segs(tok.SplitAdded(c.text)); g != c.raw {
					t.Errorf("SplitAdded(%q)\n got %s\nwant %s", c.text, g, c.raw)
				}
			}
			// The three steps by hand give what Segments gives.
			var steps []Segment
			for _, s := range tok.SplitAdded(c.text) {
				if s.Added {
					steps = append(steps, s)
					continue
				}
				n, err := tok.Normalize(s.Text)
				if err != nil {
					t.Fatal(err)
				}
				steps = append(steps, tok.SplitNormalized(n)...)
			}
			if segs(steps) != segs(got) {
				t.Errorf("SplitAdded, Normalize, SplitNormalized give %s, Segments %s", segs(steps), segs(got))
			}
		})
	}
}

// TestPrependPerSegment: a Prepend normalizer applies to each segment
// between added tokens, as in Llama 2 / Mistral tokenizers.
func TestPrependPerSegment(t *testing.T) {
	t.Parallel()
	doc := tokenizerJSON(t, "▁ab", nil, nil, []map[string]any{added("<s>", "special")},
		`{"type":"Prepend","prepend":"▁"}`, `null`)
	tok, err := Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tok.Encode("a<s>b")
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{0, 1, 3, 0, 2}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v (▁ a <s> ▁ b)", got, want)
	}
}

func TestBPE(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		model map[string]any
		text  string
		want  []int32
	}{
		{"lowest rank first", map[string]any{"vocab": map[string]int{"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4, "abc": 5},
			"merges": []string{"b c", "a b", "a bc"}}, "abc", []int32{5}},
		{"leftmost on equal ranks", map[string]any{"vocab": map[string]int{"a": 0, "aa": 1},
			"merges": []string{"a a"}}, "aaa", []int32{1, 0}},
		{"merges as pairs", map[string]any{"vocab": map[string]int{"a": 0, "b": 1, "ab": 2},
			"merges": [][]string{{"a", "b"}}}, "abab", []int32{2, 2}},
		{"ignore merges takes the whole word", map[string]any{"vocab": map[string]int{"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4},
			"merges": []string{"a b"}, "ignore_merges": true}, "abc", []int32{4}},
		{"merges when not ignored", map[string]any{"vocab": map[string]int{"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4},
			"merges": []string{"a b"}}, "abc", []int32{3, 2}},
		{"byte fallback", map[string]any{"vocab": map[string]int{"a": 0, "<0xC3>": 1, "<0xA9>": 2},
			"merges": []string{}, "byte_fallback": true}, "aé", []int32{0, 1, 2}},
		{"unk fused", map[string]any{"vocab": map[string]int{"<unk>": 0, "a": 1},
			"merges": []string{}, "unk_token": "<unk>", "fuse_unk": true}, "xya", []int32{0, 1}},
		{"unk not fused", map[string]any{"vocab": map[string]int{"<unk>": 0, "a": 1},
			"merges": []string{}, "unk_token": "<unk>"}, "xya", []int32{0, 0, 1}},
		{"no unk drops the character", map[string]any{"vocab": map[string]int{"a": 0},
			"merges": []string{}}, "xa", []int32{0}},
		{"subword prefix and suffix", map[string]any{"vocab": map[string]int{"a": 0, "##b": 1, "##c</w>": 2, "a##b": 3, "ab": 4},
			"merges": []string{"a ##b"}, "continuing_subword_prefix": "##", "end_of_word_suffix": "</w>"}, "abc", []int32{4, 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.model["type"] = "BPE"
			b, _ := json.Marshal(c.model)
			m, err := parseModel(b)
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.tokenize(c.text, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("%q: got %v, want %v", c.text, got, c.want)
			}
		})
	}
}

func TestUnigram(t *testing.T) {
	t.Parallel()
	vocab := `[["<unk>",0],["a",-1],["b",-1.5],["ab",-2],["abc",-4.5],["c",-2],["<0xC3>",-3],["<0xA9>",-3],["bc",-2.2]]`
	cases := []struct {
		name, vocab string
		unk         string
		byteFall    bool
		text        string
		want        []int32
		err         string
	}{
		{"best total score", vocab, "0", false, "abc", []int32{1, 8}, ""},          // a+bc -3.2 beats ab+c -4 and abc -4.5
		{"unknown characters fused", vocab, "0", false, "xyab", []int32{0, 3}, ""}, // one unk for "xy"
		{"byte fallback", vocab, "0", true, "aé", []int32{1, 6, 7}, ""},            // é has no piece: its bytes
		{"byte fallback missing", vocab, "0", true, "a€", []int32{1, 0}, ""},       // no <0xE2>: unk
		{"no unk id", vocab, "null", false, "ax", nil, `"x" is not in the Unigram vocabulary`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := parseModel(json.RawMessage(fmt.Sprintf(`{"type":"Unigram","unk_id":%s,"vocab":%s,"byte_fallback":%v}`, c.unk, c.vocab, c.byteFall)))
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.tokenize(c.text, nil)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("got %v, want an error with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("%q: got %v, want %v", c.text, got, c.want)
			}
		})
	}
}

// TestRefusals: what hftok does not implement is an error naming it.
func TestRefusals(t *testing.T) {
	t.Parallel()
	base := func(mod func(m map[string]any)) []byte {
		doc := tokenizerJSON(t, "ab", nil, nil, nil, `null`, `null`)
		var m map[string]any
		_ = json.Unmarshal(doc, &m)
		mod(m)
		b, _ := json.Marshal(m)
		return b
	}
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	cases := []struct {
		name string
		mod  func(m map[string]any)
		want string
	}{
		{"unigram entry", func(m map[string]any) { m["model"] = raw(`{"type":"Unigram","unk_id":0,"vocab":[["a"]]}`) }, `vocab entry 0 is not [piece, score]`},
		{"unigram unk", func(m map[string]any) { m["model"] = raw(`{"type":"Unigram","unk_id":3,"vocab":[["a",0]]}`) }, `unk_id 3 is outside`},
		{"wordpiece", func(m map[string]any) { m["model"] = raw(`{"type":"WordPiece","vocab":{"a":0}}`) }, `"WordPiece" is not implemented`},
		{"dropout", func(m map[string]any) { m["model"].(map[string]any)["dropout"] = 0.1 }, "dropout 0.1"},
		{"precompiled normalizer", func(m map[string]any) { m["normalizer"] = raw(`{"type":"Precompiled","precompiled_charsmap":""}`) }, `normalizer: type "Precompiled"`},
		{"nested normalizer", func(m map[string]any) {
			m["normalizer"] = raw(`{"type":"Sequence","normalizers":[{"type":"NFC"},{"type":"Nmt"}]}`)
		}, `Sequence[1]: type "Nmt"`},
		{"unknown pre-tokenizer", func(m map[string]any) { m["pre_tokenizer"] = raw(`{"type":"UnicodeScripts"}`) }, `pre_tokenizer: type "UnicodeScripts"`},
		{"unknown behavior", func(m map[string]any) {
			m["pre_tokenizer"] = raw(`{"type":"Split","pattern":{"String":" "},"behavior":"Sideways","invert":false}`)
		}, `behavior "Sideways"`},
		{"bad regex", func(m map[string]any) {
			m["pre_tokenizer"] = raw(`{"type":"Split","pattern":{"Regex":"(unclosed"},"behavior":"Isolated","invert":false}`)
		}, `regex "(unclosed"`},
		{"unknown post-processor", func(m map[string]any) { m["post_processor"] = raw(`{"type":"Novel"}`) }, `post_processor: type "Novel"`},
		{"nested post-processor", func(m map[string]any) {
			m["post_processor"] = raw(`{"type":"Sequence","processors":[{"type":"ByteLevel"},{"type":"Novel"}]}`)
		}, `post_processor: Sequence[1]: type "Novel"`},
		{"nested pre-tokenizer", func(m map[string]any) {
			m["pre_tokenizer"] = raw(`{"type":"Sequence","pretokenizers":[{"type":"Digits"},{"type":"UnicodeScripts"}]}`)
		}, `pre_tokenizer: Sequence[1]: type "UnicodeScripts"`},
		{"truncation", func(m map[string]any) { m["truncation"] = raw(`{"max_length":512}`) }, "truncation"},
		{"padding", func(m map[string]any) { m["padding"] = raw(`{"strategy":"BatchLongest"}`) }, "padding"},
		{"added token id", func(m map[string]any) {
			m["added_tokens"] = raw(`[{"id":7,"content":"a","special":true}]`)
		}, `added token "a" has id 7, but Hugging Face's tokenizer gives it 0`},
		{"added token twice", func(m map[string]any) {
			m["added_tokens"] = raw(`[{"id":2,"content":"<x>","special":true},{"id":3,"content":"<x>","special":false}]`)
		}, `"<x>" is listed twice`},
		{"merge out of vocabulary", func(m map[string]any) { m["model"].(map[string]any)["merges"] = []string{"a z"} }, `merge 0 ("a" "z")`},
		{"no model", func(m map[string]any) { delete(m, "model") }, "no model"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(base(c.mod))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error with %q", err, c.want)
			}
		})
	}
	tok, err := Parse(base(func(map[string]any) {}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tok.Encode("a\xffb"); err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("invalid UTF-8: got %v", err)
	}
	if _, err := Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "tokenizer.json") {
		t.Errorf("missing file: got %v", err)
	}
}
