package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/ollama/ollama/convert/sentencepiece"
	"google.golang.org/protobuf/proto"

	"github.com/udgamlabs/udgam-ci/internal/tokjson"
)

// source is every file a conversion uses, parsed once before anything is
// decided: the vocabulary's files (tokenizer.model when there is one, with
// tokenizer.json beside it when there is one; else tokenizer.json; else
// vocab.json and merges.txt), then tokenizer_config.json,
// special_tokens_map.json and the chat template.
type source struct {
	tj     *tokenizerJSON            // nil without tokenizer.json
	spm    *sentencepiece.ModelProto // nil without tokenizer.model
	vocab  *vocabFiles               // vocab.json and merges.txt; nil unless neither of the others
	config *tokenizerConfig

	chatTemplate chatTemplate
}

func read(fsys fs.FS) (*source, error) {
	s := &source{}
	var err error
	if exists(fsys, "tokenizer.json") {
		if s.tj, err = readTokenizerJSON(fsys, !exists(fsys, "tokenizer.model")); err != nil {
			return nil, err
		}
	}
	switch {
	case exists(fsys, "tokenizer.model"):
		if s.spm, err = readSentencePiece(fsys); err != nil {
			return nil, err
		}
	case s.tj != nil:
	case exists(fsys, "vocab.json") && exists(fsys, "merges.txt"):
		if s.vocab, err = readVocabFiles(fsys); err != nil {
			return nil, err
		}
	default:
		return nil, errors.New("checkpoint has no tokenizer: want tokenizer.json, tokenizer.model, or vocab.json and merges.txt")
	}
	if s.config, err = readTokenizerConfig(fsys); err != nil {
		return nil, err
	}
	if s.chatTemplate, err = readChatTemplate(fsys, s.config); err != nil {
		return nil, err
	}
	return s, nil
}

// addedToken is one entry of tokenizer.json's added_tokens, as Spec
// records it.
type addedToken = tokjson.AddedToken

// tokenizerJSON is a Hugging Face tokenizer.json as the converter reads it.
// The pipeline stages are flattened into steps, each kept whole, so that a
// field the converter does not know is never dropped silently.
type tokenizerJSON struct {
	*tokjson.File
	// vocab (id -> token) and n (one past the highest id) are a BPE
	// model's vocabulary; merges its merges, read when tokenizer.json is
	// the vocabulary's source (no tokenizer.model).
	vocab  map[int]string
	n      int
	merges [][2]string
	// normalizer and preTokenizer are the two stages, flattened.
	normalizer, preTokenizer []step
	// byteLevel: the tokenizer maps bytes to GPT-2's printable characters
	// (a ByteLevel pre-tokenizer or decoder).
	byteLevel bool
	// template is the post-processor's single-sequence template.
	template postTemplate
}

// readTokenizerJSON parses tokenizer.json; withMerges: it is the
// vocabulary's source, so a BPE model's merges are read too.
func readTokenizerJSON(fsys fs.FS, withMerges bool) (*tokenizerJSON, error) {
	b, err := fs.ReadFile(fsys, "tokenizer.json")
	if err != nil {
		return nil, err
	}
	f, err := tokjson.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	tj := &tokenizerJSON{File: f}
	if f.Model.Type == "BPE" {
		if tj.vocab, tj.n, err = vocabByID(f.Model.Vocab); err != nil {
			return nil, err
		}
		if withMerges {
			if tj.merges, err = tokjson.ParseMerges(f.Model.Merges); err != nil {
				return nil, fmt.Errorf("tokenizer.json: %w", err)
			}
		}
	}
	if tj.normalizer, err = steps(f.Normalizer, "normalizer"); err != nil {
		return nil, err
	}
	if tj.preTokenizer, err = steps(f.PreTokenizer, "pre_tokenizer"); err != nil {
		return nil, err
	}
	decoder, err := steps(f.Decoder, "decoder")
	if err != nil {
		decoder = nil // only read for ByteLevel; the scorer does not decode
	}
	for _, ss := range [][]step{tj.preTokenizer, decoder} {
		for _, s := range ss {
			tj.byteLevel = tj.byteLevel || s.Type == "ByteLevel"
		}
	}
	tj.template = readPostTemplate(f.PostProcessor)
	return tj, nil
}

// vocabByID reads a BPE model's vocab object (token -> id).
func vocabByID(raw json.RawMessage) (map[int]string, int, error) {
	var v map[string]int
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, 0, fmt.Errorf("tokenizer.json: model.vocab: %w", err)
	}
	byID := make(map[int]string, len(v))
	n := 0
	for t, id := range v {
		if prev, dup := byID[id]; dup {
			return nil, 0, fmt.Errorf("tokenizer.json: model.vocab gives id %d to both %q and %q", id, prev, t)
		}
		if id < 0 {
			return nil, 0, fmt.Errorf("tokenizer.json: model.vocab: token %q has id %d", t, id)
		}
		byID[id] = t
		n = max(n, id+1)
	}
	return byID, n, nil
}

// step is one stage of a pre-tokenizer or normalizer, with the fields the
// converter matches on; raw keeps the whole object.
type step struct {
	Type    string `json:"type"`
	Pattern *struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
	Behavior         string  `json:"behavior"`
	Invert           bool    `json:"invert"`
	IndividualDigits bool    `json:"individual_digits"`
	AddPrefixSpace   *bool   `json:"add_prefix_space"`
	UseRegex         *bool   `json:"use_regex"`
	Replacement      string  `json:"replacement"`
	PrependScheme    string  `json:"prepend_scheme"`
	Split            *bool   `json:"split"`
	Content          *string `json:"content"`
	Prepend          *string `json:"prepend"`
	raw              json.RawMessage
}

// sequenceKeys name the list a Sequence holds in each pipeline stage.
var sequenceKeys = map[string]string{"normalizer": "normalizers", "pre_tokenizer": "pretokenizers", "decoder": "decoders"}

// steps flattens the pipeline stage named what: a Sequence (read by
// tokjson.ParseSequence, as every reader of tokenizer.json reads one)
// gives its members in order, nested ones flattened; null gives none.
func steps(raw json.RawMessage, what string) ([]step, error) {
	if tokjson.IsNull(raw) {
		return nil, nil
	}
	var s step
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %s: %w", what, err)
	}
	s.raw = raw
	if s.Type != "Sequence" {
		return []step{s}, nil
	}
	members, err := tokjson.ParseSequence(raw, sequenceKeys[what], func(m json.RawMessage) (*[]step, error) {
		ss, err := steps(m, what)
		return &ss, err
	})
	if err != nil {
		return nil, fmt.Errorf("tokenizer.json: %s: %w", what, err)
	}
	var out []step
	for _, m := range members {
		out = append(out, *m...)
	}
	return out, nil
}

// postTemplate is what the converter reads of tokenizer.json's
// post-processor: its first TemplateProcessing (found), and the ids of the
// special token its single-sequence template starts with (none when it
// starts otherwise).
type postTemplate struct {
	found    bool
	firstIDs []int
}

// readPostTemplate finds the first TemplateProcessing, in a Sequence too;
// an entry that does not parse is passed over.
func readPostTemplate(raw json.RawMessage) postTemplate {
	var pp struct {
		Type       string            `json:"type"`
		Processors []json.RawMessage `json:"processors"`
		Single     []struct {
			SpecialToken *struct {
				ID string `json:"id"`
			} `json:"SpecialToken"`
		} `json:"single"`
		SpecialTokens map[string]struct {
			IDs []int `json:"ids"`
		} `json:"special_tokens"`
	}
	procs := []json.RawMessage{raw}
	for len(procs) > 0 {
		raw := procs[0]
		procs = procs[1:]
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		pp.Processors, pp.Single, pp.SpecialTokens = nil, nil, nil
		if json.Unmarshal(raw, &pp) != nil {
			continue
		}
		if pp.Type == "Sequence" {
			procs = append(procs, pp.Processors...)
			continue
		}
		if pp.Type != "TemplateProcessing" {
			continue
		}
		t := postTemplate{found: true}
		if len(pp.Single) > 0 && pp.Single[0].SpecialToken != nil {
			t.firstIDs = pp.SpecialTokens[pp.Single[0].SpecialToken.ID].IDs
		}
		return t
	}
	return postTemplate{}
}

// readSentencePiece parses tokenizer.model (SentencePiece's protobuf).
func readSentencePiece(fsys fs.FS) (*sentencepiece.ModelProto, error) {
	b, err := fs.ReadFile(fsys, "tokenizer.model")
	if err != nil {
		return nil, err
	}
	var spm sentencepiece.ModelProto
	if err := proto.Unmarshal(b, &spm); err != nil {
		return nil, fmt.Errorf("tokenizer.model: %w", err)
	}
	return &spm, nil
}

// vocabFiles are a GPT-2 style vocab.json and merges.txt (a checkpoint
// without tokenizer.json).
type vocabFiles struct {
	ids    map[string]int // token -> id
	byID   map[int]string
	n      int // one past the highest id
	merges [][2]string
}

func readVocabFiles(fsys fs.FS) (*vocabFiles, error) {
	b, err := fs.ReadFile(fsys, "vocab.json")
	if err != nil {
		return nil, err
	}
	v := &vocabFiles{}
	if err := json.Unmarshal(b, &v.ids); err != nil {
		return nil, fmt.Errorf("vocab.json: %w", err)
	}
	v.byID = make(map[int]string, len(v.ids))
	for t, id := range v.ids {
		if prev, dup := v.byID[id]; dup || id < 0 {
			return nil, fmt.Errorf("vocab.json: id %d given to %q and %q", id, prev, t)
		}
		v.byID[id] = t
		v.n = max(v.n, id+1)
	}
	if v.merges, err = readMergesTxt(fsys); err != nil {
		return nil, err
	}
	return v, nil
}

func readMergesTxt(fsys fs.FS) ([][2]string, error) {
	b, err := fs.ReadFile(fsys, "merges.txt")
	if err != nil {
		return nil, err
	}
	var out [][2]string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "" || (n == 1 && strings.HasPrefix(line, "#version")) {
			continue
		}
		a, b, ok := strings.Cut(line, " ")
		if !ok || a == "" || b == "" || strings.Contains(b, " ") {
			return nil, fmt.Errorf("merges.txt line %d: %q is not two pieces separated by a space", n, line)
		}
		out = append(out, [2]string{a, b})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("merges.txt: %w", err)
	}
	return out, nil
}

// tokenizerConfig is the part of tokenizer_config.json (and
// special_tokens_map.json) the converter reads. Special tokens are kept
// raw: each is a string, an AddedToken object, or null.
type tokenizerConfig struct {
	raw            map[string]json.RawMessage
	specials       map[string]json.RawMessage // special_tokens_map.json
	AddPrefixSpace bool
}

func readTokenizerConfig(fsys fs.FS) (*tokenizerConfig, error) {
	tc := &tokenizerConfig{raw: map[string]json.RawMessage{}, specials: map[string]json.RawMessage{}}
	for _, f := range []struct {
		name string
		into *map[string]json.RawMessage
	}{{"tokenizer_config.json", &tc.raw}, {"special_tokens_map.json", &tc.specials}} {
		b, err := fs.ReadFile(fsys, f.name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, f.into); err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
	}
	if v, ok := tc.raw["add_prefix_space"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &tc.AddPrefixSpace); err != nil {
			return nil, fmt.Errorf("tokenizer_config.json: add_prefix_space: %w", err)
		}
	}
	return tc, nil
}

// token returns the text of special token key (bos_token, eos_token, ...):
// from tokenizer_config.json when it names the key (even as null), else
// from special_tokens_map.json. ok is false when the tokenizer has none.
func (tc *tokenizerConfig) token(key string) (text, from string, ok bool, err error) {
	for _, src := range []struct {
		name string
		m    map[string]json.RawMessage
	}{{"tokenizer_config.json", tc.raw}, {"special_tokens_map.json", tc.specials}} {
		v, present := src.m[key]
		if !present {
			continue
		}
		if string(v) == "null" {
			return "", src.name, false, nil
		}
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s, src.name, true, nil
		}
		var obj struct {
			Content *string `json:"content"`
		}
		if err := json.Unmarshal(v, &obj); err != nil || obj.Content == nil {
			return "", src.name, false, fmt.Errorf("%s: %s is neither a string, a token object nor null", src.name, key)
		}
		return *obj.Content, src.name, true, nil
	}
	return "", "", false, nil
}

// addBOSToken reads add_bos_token; set is false when the file does not say.
func (tc *tokenizerConfig) addBOSToken() (v, set bool) {
	raw, ok := tc.raw["add_bos_token"]
	if !ok || json.Unmarshal(raw, &v) != nil {
		return false, false
	}
	return v, true
}

// addedTokens lists the added tokens of a checkpoint without
// tokenizer.json: tokenizer_config.json's added_tokens_decoder, and the
// named special tokens that the vocabulary holds (the slow tokenizers
// match them in text too).
func (tc *tokenizerConfig) addedTokens(vocab map[string]int) ([]addedToken, error) {
	var out []addedToken
	seen := map[string]bool{}
	if raw, ok := tc.raw["added_tokens_decoder"]; ok {
		var dec map[string]addedToken
		if err := json.Unmarshal(raw, &dec); err != nil {
			return nil, fmt.Errorf("tokenizer_config.json: added_tokens_decoder: %w", err)
		}
		for k, a := range dec {
			id, err := strconv.Atoi(k)
			if err != nil {
				return nil, fmt.Errorf("tokenizer_config.json: added_tokens_decoder key %q is not an id", k)
			}
			a.ID = id
			out = append(out, a)
			seen[a.Content] = true
		}
	}
	for _, key := range []string{"bos_token", "eos_token", "unk_token", "pad_token"} {
		text, _, ok, err := tc.token(key)
		if err != nil {
			return nil, err
		}
		if !ok || seen[text] {
			continue
		}
		id, ok := vocab[text]
		if !ok {
			return nil, fmt.Errorf("tokenizer_config.json: %s %q is not in the vocabulary", key, text)
		}
		out = append(out, addedToken{ID: id, Content: text, Special: true})
		seen[text] = true
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// chatTemplate is the tokenizer's chat template and the file it came from;
// from is "" when it has none.
type chatTemplate struct{ text, from string }

// readChatTemplate reads chat_template.jinja (newer transformers save the
// template there), else tokenizer_config.json's chat_template, a string or
// a list of named templates of which "default" is the one carried.
func readChatTemplate(fsys fs.FS, tc *tokenizerConfig) (chatTemplate, error) {
	b, err := fs.ReadFile(fsys, "chat_template.jinja")
	switch {
	case err == nil:
		return chatTemplate{text: string(b), from: "chat_template.jinja"}, nil
	case !errors.Is(err, fs.ErrNotExist):
		return chatTemplate{}, err
	}
	raw, ok := tc.raw["chat_template"]
	if !ok || string(raw) == "null" {
		return chatTemplate{}, nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		var named []struct {
			Name     string `json:"name"`
			Template string `json:"template"`
		}
		if err := json.Unmarshal(raw, &named); err != nil {
			return chatTemplate{}, fmt.Errorf("tokenizer_config.json: chat_template is neither a string nor a list of named templates")
		}
		for _, n := range named {
			if n.Name == "default" {
				s = n.Template
			}
		}
		if s == "" {
			return chatTemplate{}, nil
		}
	}
	return chatTemplate{text: s, from: "tokenizer_config.json"}, nil
}

func exists(fsys fs.FS, name string) bool {
	_, err := fs.Stat(fsys, name)
	return err == nil
}
