package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/ollama/ollama/convert/sentencepiece"

	"github.com/udgamlabs/udgam-ci/convert/converttest"
	"github.com/udgamlabs/udgam-ci/reference/hfref"
)

// llamaVocabCpp is the vendored llama.cpp's llama-vocab.cpp.
func llamaVocabCpp(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/ollama/ollama").Output()
	if err != nil {
		t.Fatalf("find the ollama module: %v", err)
	}
	path := filepath.Join(strings.TrimSpace(string(out)), "llama", "llama.cpp", "src", "llama-vocab.cpp")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPreTokenizersMatchLlamaCpp reads llama.cpp's own table: each
// supported name selects the type whose regex_exprs are the entry's
// Regexes, whose comment names the entry's Original as tokenizer.json's,
// and which sets ignore_merges exactly when the entry says so.
func TestPreTokenizersMatchLlamaCpp(t *testing.T) {
	t.Parallel()
	src := llamaVocabCpp(t)
	for _, p := range preTokenizers {
		t.Run(p.Name, func(t *testing.T) {
			// tokenizer_pre == "name" ... pre_type = LLAMA_VOCAB_PRE_TYPE_X; [ignore_merges = true;] ... }
			sel := regexp.MustCompile(`tokenizer_pre == "` + regexp.QuoteMeta(p.Name) + `"[^{]*\{\s*pre_type = (LLAMA_VOCAB_PRE_TYPE_\w+);([^}]*)\}`).FindStringSubmatch(src)
			if sel == nil {
				t.Fatalf("llama-vocab.cpp does not select a type for %q", p.Name)
			}
			if got := strings.Contains(sel[2], "ignore_merges = true"); got != p.IgnoreMerges {
				t.Errorf("llama.cpp sets ignore_merges=%v for %s; the table says %v", got, p.Name, p.IgnoreMerges)
			}
			// case LLAMA_VOCAB_PRE_TYPE_X: [case ...:] regex_exprs = { ... };
			// The block ends at a "};" line: a regex may hold ";" (DeepSeek-V3's).
			block := regexp.MustCompile(`(?s)case ` + sel[1] + `:(?:\s*case \w+:)*\s*regex_exprs = \{(.*?)\n\s*\};`).FindStringSubmatch(src)
			if block == nil {
				t.Fatalf("llama-vocab.cpp has no regex_exprs for %s", sel[1])
			}
			var exprs []string
			for _, line := range strings.Split(block[1], "\n") {
				line = strings.TrimSpace(line)
				if strings.HasPrefix(line, "//") {
					if strings.Contains(line, "original regex from tokenizer.json") || !strings.HasPrefix(line, `// "`) {
						continue
					}
					lit, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(line, "// "), ","))
					if err != nil {
						t.Fatalf("comment %s: %v", line, err)
					}
					if lit != p.Original {
						t.Errorf("llama.cpp's original regex for %s is %q; the table has %q", p.Name, lit, p.Original)
					}
					continue
				}
				if line == "" {
					continue
				}
				lit, err := strconv.Unquote(strings.TrimSuffix(line, ","))
				if err != nil {
					t.Fatalf("regex_exprs line %s: %v", line, err)
				}
				exprs = append(exprs, lit)
			}
			if !slices.Equal(exprs, p.Regexes) {
				t.Errorf("llama.cpp's regex_exprs for %s:\n%q\nthe table:\n%q", sel[1], exprs, p.Regexes)
			}
			if p.Original != "" && !strings.Contains(block[0], strconv.Quote(p.Original)[1:]) {
				t.Errorf("llama.cpp's block for %s does not quote the original regex %q", sel[1], p.Original)
			}
		})
	}
}

// byteLevel is a tiny byte-level BPE tokenizer.json with the given
// pre-tokenizer and normalizer.
func byteLevel(pre, normalizer any) map[string]any {
	vocab := map[string]int{}
	for i, c := range byteChars() {
		vocab[c] = i
	}
	vocab["th"] = 256
	return map[string]any{
		"added_tokens":  []map[string]any{{"id": 257, "content": "<|endoftext|>", "special": true}},
		"normalizer":    normalizer,
		"pre_tokenizer": pre,
		"model":         map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{"t h"}},
	}
}

var plainByteLevel = map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}

// spmTokenizer is a tiny SentencePiece-style tokenizer.json: byte
// fallback, ▁ for spaces, a few merges.
func spmTokenizer(normalizer, pre any, merges []string, extra ...string) map[string]any {
	vocab := map[string]int{"<unk>": 0, "<s>": 1, "</s>": 2}
	for b := range 256 {
		vocab[fmt.Sprintf("<0x%02X>", b)] = len(vocab)
	}
	for _, p := range append([]string{"▁", "a", "b", "c", "▁a", "ab", "abc"}, extra...) {
		vocab[p] = len(vocab)
	}
	return map[string]any{
		"added_tokens":  []map[string]any{{"id": 0, "content": "<unk>", "special": true}, {"id": 1, "content": "<s>", "special": true}, {"id": 2, "content": "</s>", "special": true}},
		"normalizer":    normalizer,
		"pre_tokenizer": pre,
		"model":         map[string]any{"type": "BPE", "byte_fallback": true, "unk_token": "<unk>", "vocab": vocab, "merges": merges},
	}
}

var legacySPM = map[string]any{"type": "Sequence", "normalizers": []any{
	map[string]any{"type": "Prepend", "prepend": "▁"},
	map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"},
}}

func files(t *testing.T, tj map[string]any, config map[string]any) fstest.MapFS {
	t.Helper()
	fsys := fstest.MapFS{}
	b, err := json.Marshal(tj)
	if err != nil {
		t.Fatal(err)
	}
	fsys["tokenizer.json"] = &fstest.MapFile{Data: b}
	if config != nil {
		b, _ := json.Marshal(config)
		fsys["tokenizer_config.json"] = &fstest.MapFile{Data: b}
	}
	return fsys
}

// TestRefusals: what the converter cannot reproduce exactly is refused
// with a message naming it, and AllowUnverified converts it with the
// reason in Spec.Unverified.
func TestRefusals(t *testing.T) {
	t.Parallel()
	otherSplit := map[string]any{"type": "Sequence", "pretokenizers": []any{
		map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `\p{L}+|\p{N}{1,2}`}, "behavior": "Isolated", "invert": false},
		map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
	}}
	spmMerges := []string{"▁ a", "a b", "ab c"}
	qwenIgnoringMerges := byteLevel(map[string]any{"type": "Sequence", "pretokenizers": []any{
		map[string]any{"type": "Split", "pattern": map[string]any{"Regex": qwen2Regex}, "behavior": "Isolated"},
		map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}}}, nil)
	qwenIgnoringMerges["model"].(map[string]any)["ignore_merges"] = true
	tests := []struct {
		name       string
		fsys       fstest.MapFS
		want       []string
		unverified bool // AllowUnverified converts it
	}{
		{"unknown pre-tokenizer", files(t, byteLevel(otherSplit, nil), nil),
			[]string{`pre-tokenizer Split(Regex="\\p{L}+|\\p{N}{1,2}", behavior=Isolated, invert=false) + ByteLevel(add_prefix_space=false, use_regex=false) (model ignore_merges=false) matches none of llama.cpp's pre-tokenizer types exactly`, "supported:", "llama-bpe: Split(", "gpt-2: ByteLevel(add_prefix_space=false, use_regex=true)", "--allow-unverified-tokenizer"}, true},
		{"ByteLevel add_prefix_space", files(t, byteLevel(map[string]any{"type": "ByteLevel", "add_prefix_space": true}, nil), nil),
			[]string{"pre-tokenizer ByteLevel(add_prefix_space=true, use_regex=true)", "matches none"}, true},
		{"qwen2 regex with ignore_merges", files(t, qwenIgnoringMerges, nil),
			[]string{"(model ignore_merges=true) matches none"}, true},
		{"WordPiece", files(t, map[string]any{"model": map[string]any{"type": "WordPiece", "vocab": map[string]int{"a": 0}}}, nil),
			[]string{`model type "WordPiece" is not supported`}, false},
		{"Unigram", files(t, map[string]any{"model": map[string]any{"type": "Unigram", "vocab": [][]any{{"a", -1.0}}}}, nil),
			[]string{`model type "Unigram" is not supported`}, false},
		{"unknown normalizer", files(t, byteLevel(plainByteLevel, map[string]any{"type": "BertNormalizer", "lowercase": true}), nil),
			[]string{`normalizer step {"lowercase":true,"type":"BertNormalizer"} is applied neither by llama.cpp nor by udgam-ci`}, true},
		{"Replace with a regex", files(t, byteLevel(plainByteLevel, map[string]any{"type": "Replace", "pattern": map[string]any{"Regex": `\s+`}, "content": " "}), nil),
			[]string{`normalizer step Replace(Regex="\\s+", content=" ")`}, true},
		{"Metaspace prepend always", files(t, spmTokenizer(nil, map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": false}, spmMerges), nil),
			[]string{`Metaspace puts "▁" first only when the text does not start with a space`}, true},
		{"Metaspace prepend first, split", files(t, spmTokenizer(nil, map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": true}, spmMerges), nil),
			[]string{`Metaspace puts "▁" first only when the text does not start with a space`}, true},
		{"o200k", files(t, byteLevel(map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": o200kRegex}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}}}, nil), nil),
			[]string{"is refused: llama.cpp's gpt-4o pre-tokenizer", "combining marks"}, true},
		{"SentencePiece without space replacement", files(t, spmTokenizer(map[string]any{"type": "NFC"}, nil, spmMerges), nil),
			[]string{"whitespace handling: normalizer NFC, pre-tokenizer none: not one that llama.cpp's SentencePiece tokenizer reproduces"}, true},
		{"SentencePiece merges incomplete", files(t, spmTokenizer(legacySPM, nil, []string{"▁ a", "a b"}), nil),
			[]string{`ways llama.cpp's SentencePiece merging can form a token are not merges of the BPE model`, `"ab"+"c"="abc"`}, true},
		{"SentencePiece merge order", files(t, spmTokenizer(legacySPM, nil, []string{"▁ a", "a b", "ab c", "x y", "xy z", "y z", "yz w", "x yz"}, "x", "y", "z", "w", "xy", "yz", "xyz", "yzw"), nil),
			[]string{`1 merges are ranked in an order llama.cpp's scores cannot follow`, `merge 6 "yz"+"w" before merge 7 "x"+"yz"`}, true},
		{"BOS not in vocabulary", files(t, byteLevel(plainByteLevel, nil), map[string]any{"bos_token": "<bos>"}),
			[]string{`tokenizer_config.json: bos_token "<bos>" is not a token of the vocabulary`}, false},
		{"no tokenizer", fstest.MapFS{"config.json": {Data: []byte("{}")}},
			[]string{"checkpoint has no tokenizer: want tokenizer.json, tokenizer.model, or vocab.json and merges.txt"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Convert(tt.fsys, Options{})
			if err == nil {
				t.Fatal("converted; want a refusal")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not say %q", err, w)
				}
			}
			res, err := Convert(tt.fsys, Options{AllowUnverified: true})
			if !tt.unverified {
				if err == nil {
					t.Errorf("AllowUnverified converted it; want a refusal all the same")
				}
				return
			}
			if err != nil {
				t.Fatalf("AllowUnverified: %v", err)
			}
			if !strings.Contains(res.Spec.Unverified, tt.want[0]) {
				t.Errorf("Spec.Unverified %q does not say %q", res.Spec.Unverified, tt.want[0])
			}
		})
	}
}

// TestMetaspaceFirst: a Llama 2 style tokenizer.json (Metaspace with
// prepend_scheme "first", split false, no normalizer) converts with
// llama.cpp's add_space_prefix off and the first segment's space left to
// the scoring side (tokspec.Spec.SpacePrefixFirst). Its ids are checked on
// real vocabulary in cmd/udgam-ci (TestWidenedTokenizers, and against
// Hugging Face tokenizers in TestTokenizersReference).
func TestMetaspaceFirst(t *testing.T) {
	t.Parallel()
	ms := map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false}
	res, err := Convert(files(t, spmTokenizer(nil, ms, []string{"▁ a", "a b", "ab c"}), nil), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Spec.SpacePrefixFirst || res.KV["tokenizer.ggml.add_space_prefix"] != false {
		t.Errorf("SpacePrefixFirst %v, add_space_prefix %v; want true and false", res.Spec.SpacePrefixFirst, res.KV["tokenizer.ggml.add_space_prefix"])
	}
}

// TestSentencePieceScores: scores follow the merges (the first merge that
// makes a token gives its score), bytes and the unknown token get their
// types, added tokens are control tokens, and the legacy normalizer is
// llama.cpp's add_space_prefix.
func TestSentencePieceScores(t *testing.T) {
	t.Parallel()
	res, err := Convert(files(t, spmTokenizer(legacySPM, nil, []string{"▁ a", "a b", "ab c"}), map[string]any{"bos_token": "<s>", "eos_token": "</s>"}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	tokens := res.KV["tokenizer.ggml.tokens"].([]string)
	scores := res.KV["tokenizer.ggml.scores"].([]float32)
	types := res.KV["tokenizer.ggml.token_type"].([]int32)
	score := map[string]float32{}
	typ := map[string]int32{}
	for i, tok := range tokens {
		score[tok], typ[tok] = scores[i], types[i]
	}
	if score["▁a"] != 0 || score["ab"] != -1 || score["abc"] != -2 || score["a"] >= score["abc"] {
		t.Errorf("scores ▁a %v ab %v abc %v a %v; want 0, -1, -2 and below", score["▁a"], score["ab"], score["abc"], score["a"])
	}
	if typ["<0x41>"] != typeByte || typ["<unk>"] != typeUnknown || typ["<s>"] != typeControl || typ["a"] != typeNormal {
		t.Errorf("types <0x41> %d <unk> %d <s> %d a %d", typ["<0x41>"], typ["<unk>"], typ["<s>"], typ["a"])
	}
	if res.KV["tokenizer.ggml.add_space_prefix"] != true || res.KV["tokenizer.ggml.model"] != "llama" || len(res.Spec.Normalizer) != 0 {
		t.Errorf("add_space_prefix %v model %v normalizer %s", res.KV["tokenizer.ggml.add_space_prefix"], res.KV["tokenizer.ggml.model"], res.Spec.Normalizer)
	}
	if res.BOS != 1 || res.EOS != 2 {
		t.Errorf("BOS %d EOS %d", res.BOS, res.EOS)
	}
}

// TestVocabMerges: GPT-2's vocab.json and merges.txt without
// tokenizer.json give the same vocabulary, merges and pre-tokenizer as
// its tokenizer.json.
func TestVocabMerges(t *testing.T) {
	t.Parallel()
	dir := hfref.Dir(t, "gpt2")
	full, err := Convert(os.DirFS(dir), Options{})
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{}
	for _, name := range []string{"vocab.json", "merges.txt", "tokenizer_config.json", "special_tokens_map.json"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		fsys[name] = &fstest.MapFile{Data: b}
	}
	slow, err := Convert(fsys, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.add_bos_token"} {
		if full.KV[k] != slow.KV[k] {
			t.Errorf("%s: tokenizer.json %v, vocab.json %v", k, full.KV[k], slow.KV[k])
		}
	}
	for _, k := range []string{"tokenizer.ggml.tokens", "tokenizer.ggml.merges"} {
		if !slices.Equal(full.KV[k].([]string), slow.KV[k].([]string)) {
			t.Errorf("%s differ", k)
		}
	}
	if !slices.Equal(full.KV["tokenizer.ggml.token_type"].([]int32), slow.KV["tokenizer.ggml.token_type"].([]int32)) {
		t.Errorf("token types differ")
	}
	if slow.Spec.Source != "vocab.json+merges.txt" || string(slow.Spec.AddedTokens) == "" {
		t.Errorf("spec %+v", slow.Spec)
	}
}

// TestSentencePieceModel: a tokenizer.model gives its pieces, scores,
// types and dummy prefix; a Unigram model is refused.
func TestSentencePieceModel(t *testing.T) {
	t.Parallel()
	model := func(mt sentencepiece.TrainerSpec_ModelType) []byte {
		b, err := converttest.SentencePieceModel(mt, "<tool>")
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	config, _ := json.Marshal(map[string]any{"bos_token": "<s>", "eos_token": "</s>"})
	res, err := Convert(fstest.MapFS{"tokenizer.model": {Data: model(sentencepiece.TrainerSpec_BPE)}, "tokenizer_config.json": {Data: config}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tokens := res.KV["tokenizer.ggml.tokens"].([]string)
	types := res.KV["tokenizer.ggml.token_type"].([]int32)
	scores := res.KV["tokenizer.ggml.scores"].([]float32)
	if len(tokens) != 261 || tokens[259] != "▁" || scores[259] != -1 || scores[260] != -2 || types[3] != typeByte || types[260] != typeNormal || types[1] != typeControl || types[0] != typeUnknown {
		t.Errorf("tokens %d, ▁ %q scores %v %v, types %v %v %v %v", len(tokens), tokens[259], scores[259], scores[260], types[3], types[260], types[1], types[0])
	}
	if res.KV["tokenizer.ggml.add_space_prefix"] != true || res.Spec.Source != "tokenizer.model" {
		t.Errorf("add_space_prefix %v, source %s", res.KV["tokenizer.ggml.add_space_prefix"], res.Spec.Source)
	}
	_, err = Convert(fstest.MapFS{"tokenizer.model": {Data: model(sentencepiece.TrainerSpec_UNIGRAM)}}, Options{})
	if err == nil || !strings.Contains(err.Error(), "SentencePiece model type UNIGRAM is not supported") {
		t.Errorf("Unigram: %v", err)
	}
}

// TestPadding: padding tokens are unused (never matched in text), and
// added tokens beyond vocab_size are left out.
func TestPadding(t *testing.T) {
	t.Parallel()
	fsys := files(t, byteLevel(plainByteLevel, nil), nil)
	res, err := Convert(fsys, Options{VocabSize: 261})
	if err != nil {
		t.Fatal(err)
	}
	tokens := res.KV["tokenizer.ggml.tokens"].([]string)
	types := res.KV["tokenizer.ggml.token_type"].([]int32)
	if len(tokens) != 261 || tokens[258] != "[PAD0]" || types[258] != typeUnused || types[260] != typeUnused || types[257] != typeControl {
		t.Errorf("tokens %d %q types %v", len(tokens), tokens[258:], types[257:])
	}
	res, err = Convert(fsys, Options{VocabSize: 257})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.KV["tokenizer.ggml.tokens"].([]string)); n != 257 {
		t.Errorf("%d tokens; want the added token beyond vocab_size 257 left out", n)
	}
	if _, err := Convert(fsys, Options{VocabSize: 200}); err == nil || !strings.Contains(err.Error(), "config.json's vocab_size is 200") {
		t.Errorf("vocab_size below the vocabulary: %v", err)
	}
}

// TestAddedTokenTypes: no added token is user-defined (llama.cpp would
// match it in text by itself); special ones are control tokens, the
// others normal, and all are recorded for the scoring side.
func TestAddedTokenTypes(t *testing.T) {
	t.Parallel()
	tj := byteLevel(plainByteLevel, nil)
	tj["added_tokens"] = []map[string]any{
		{"id": 257, "content": "<|endoftext|>", "special": true},
		{"id": 258, "content": "<think>", "special": false},
	}
	res, err := Convert(files(t, tj, nil), Options{})
	if err != nil {
		t.Fatal(err)
	}
	types := res.KV["tokenizer.ggml.token_type"].([]int32)
	if types[257] != typeControl || types[258] != typeNormal {
		t.Errorf("types %v; want control for the special token, normal for <think>", types[257:])
	}
	var added []addedToken
	if err := json.Unmarshal(res.Spec.AddedTokens, &added); err != nil || len(added) != 2 || added[1].Content != "<think>" || added[1].Special {
		t.Errorf("Spec.AddedTokens %s (%v)", res.Spec.AddedTokens, err)
	}
}

// TestMissingBytes: a byte-level vocabulary without a token for some bytes
// (SmolLM2's lacks 21) and without an unk_token converts, recording them
// for the scoring side, which refuses text holding one (Hugging Face drops
// such a byte; llama.cpp would abort on it); with an unk_token it is
// refused. The id a removed byte leaves holds an unused placeholder.
func TestMissingBytes(t *testing.T) {
	t.Parallel()
	tj := byteLevel(plainByteLevel, nil)
	delete(tj["model"].(map[string]any)["vocab"].(map[string]int), byteChars()[4])
	res, err := Convert(files(t, tj, nil), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Spec.MissingBytes, []int{4}) {
		t.Errorf("MissingBytes %v, want [4]", res.Spec.MissingBytes)
	}
	if tokens, types := res.KV["tokenizer.ggml.tokens"].([]string), res.KV["tokenizer.ggml.token_type"].([]int32); tokens[4] != "[GAP4]" || types[4] != typeUnused {
		t.Errorf("id 4: %q of type %d, want an unused placeholder", tokens[4], types[4])
	}
	tj["model"].(map[string]any)["unk_token"] = "<|endoftext|>"
	if _, err := Convert(files(t, tj, nil), Options{}); err == nil || !strings.Contains(err.Error(), "no token for byte 0x04") {
		t.Errorf("with an unk_token: %v; want a refusal naming byte 0x04", err)
	}
}
