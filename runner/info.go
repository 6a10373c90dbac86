package runner

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"sort"

	"github.com/ollama/ollama/fs/ggml"

	"github.com/udgamlabs/udgam-ci/ggufspec"
	"github.com/udgamlabs/udgam-ci/ggufspec/tokspec"
)

// ReadInfo reads a GGUF file's metadata in pure Go, before llama.cpp sees
// it, so that a missing, foreign or truncated file is a Go error naming the
// file rather than an abort inside C. It also hashes the whole file.
func ReadInfo(path string) (info Info, err error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Info{}, fmt.Errorf("model %s: file not found (give the path of a .gguf file, or fetch one with `udgam-ci model fetch`)", path)
		}
		return Info{}, fmt.Errorf("model %s: %w", path, err)
	}
	defer f.Close()

	var magic [4]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil || string(magic[:]) != "GGUF" {
		return Info{}, fmt.Errorf("model %s: not a GGUF file (it does not start with the GGUF magic)", path)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Info{}, fmt.Errorf("model %s: %w", path, err)
	}

	// The decoder trusts sizes read from the file; a crafted file must not
	// take the process down with it.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("model %s: malformed GGUF: %v", path, r)
		}
	}()
	g, err := ggml.Decode(f, -1)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return Info{}, fmt.Errorf("model %s: truncated GGUF (the file ends inside its header)", path)
		}
		return Info{}, fmt.Errorf("model %s: malformed GGUF: %w", path, err)
	}
	if info, err = infoFromGGUF(g.KV(), g.Tensors().Items()); err != nil {
		return Info{}, fmt.Errorf("model %s: %w", path, err)
	}
	info.Path = path
	if err := checkLoadable(g.KV()); err != nil {
		return Info{}, fmt.Errorf("model %s: %w", path, err)
	}

	if info.SHA256, err = fileSHA256(f); err != nil {
		return Info{}, fmt.Errorf("model %s: hash: %w", path, err)
	}
	if info.Fingerprint, err = fingerprint(f, g.Tensors()); err != nil {
		return Info{}, fmt.Errorf("model %s: %w", path, err)
	}
	if info.VocabSize == 0 {
		return Info{}, fmt.Errorf("model %s: no tokenizer in the GGUF (tokenizer.ggml.tokens is missing)", path)
	}
	return info, nil
}

// positionTable is llama.cpp's tensor of learned absolute position
// embeddings. llama.cpp looks positions up in it unchecked: a position past
// its end aborts the process (GGML_ASSERT in ggml's get_rows).
const positionTable = "position_embd.weight"

func infoFromGGUF(kv ggml.KV, tensors []*ggml.Tensor) (Info, error) {
	arch := kv.Architecture()
	info := Info{
		Name:           kv.String("general.name"),
		Arch:           arch,
		TensorTypes:    map[string]int{},
		TokenizerModel: kv.String("tokenizer.ggml.model"),
		TokenizerPre:   kv.String("tokenizer.ggml.pre"),
		ContextLength:  int(kv.Uint("context_length")), // KV.Uint adds the arch prefix
		BOS:            tokenID(kv, "tokenizer.ggml.bos_token_id"),
		EOS:            tokenID(kv, "tokenizer.ggml.eos_token_id"),
		AddBOS:         kv.Bool("tokenizer.ggml.add_bos_token", false),
	}
	elems := map[string]uint64{}
	for _, t := range tensors {
		if t.Name == positionTable && len(t.Shape) == 2 {
			info.MaxPositions = int(t.Shape[1]) // ggml order: n_embd, then positions
		}
		info.Params += t.Elements()
		info.TensorTypes[t.Type()]++
		elems[t.Type()] += t.Elements()
	}
	info.Dtype = fileType(kv, elems)
	info.TensorParams = elems
	tokens := kv.Strings("tokenizer.ggml.tokens")
	types := kv.Ints("tokenizer.ggml.token_type")
	info.VocabSize = len(tokens)
	info.BOSText = TokenText(tokens, info.BOS)
	info.ChatTemplateSHA256 = ChatTemplateSHA256(kv.String(ggufspec.ChatTemplateKey))
	info.AddSpacePrefix = AddSpacePrefix(info.TokenizerModel, kv)
	info.ControlTokens, info.UserTokens = SpecialTokens(tokens, types)
	spec := kv.String(tokspec.Key)
	if spec != "" {
		s, err := tokspec.Decode(spec)
		if err != nil {
			return Info{}, err
		}
		info.TokenizerSpec = &s
	}
	info.TokenizerSHA256 = WithSpec(TokenizerSHA256(kv.String("tokenizer.ggml.model"), kv.String("tokenizer.ggml.pre"),
		tokens, kv.Strings("tokenizer.ggml.merges"), types), spec)
	special := map[string]any{}
	for _, k := range TokenizerSpecialKeys {
		if v, ok := kv[k]; ok {
			special[k] = v
		}
	}
	info.Tokenizer = NewTokenizerFields(kv.String("tokenizer.ggml.model"), kv.String("tokenizer.ggml.pre"),
		tokens, kv.Strings("tokenizer.ggml.merges"), kv.Floats("tokenizer.ggml.scores"), types, special)
	return info, nil
}

// llama.cpp's token types that decide matching in text: control tokens
// (BOS, EOS, <|im_start|>...) are never matched when special tokens are not
// parsed; user-defined tokens always are.
const (
	TokenControl     = 3
	TokenUserDefined = 4
)

// AddSpacePrefix reads whether llama.cpp prepends a space to text before
// tokenizing it: its default is on for SentencePiece ("llama") and off for
// the others, and tokenizer.ggml.add_space_prefix overrides it.
func AddSpacePrefix(model string, kv ggml.KV) bool {
	return kv.Bool("tokenizer.ggml.add_space_prefix", model == "llama")
}

// WithSpec folds the tokenizer record udgam-ci's converter writes (its
// JSON, tokspec.Key) into a tokenizer hash: the normalizer and the added
// tokens change ids as much as the vocabulary does. Without a record the
// hash is unchanged.
func WithSpec(sum, spec string) string {
	if spec == "" {
		return sum
	}
	h := sha256.New()
	writeField(h, "vocabulary", []string{sum})
	writeField(h, "udgam_ci.tokenizer", []string{spec})
	return hex.EncodeToString(h.Sum(nil))
}

// tokenID reads an optional token id; -1 means the tokenizer has none.
func tokenID(kv ggml.KV, key string) int32 {
	v, ok := kv[key]
	if !ok {
		return -1
	}
	switch n := v.(type) {
	case uint32:
		return int32(n)
	case int32:
		return n
	case uint64:
		return int32(n)
	case int64:
		return int32(n)
	}
	return -1
}

// fileType names the file's type as llama.cpp's quantizer and converter
// record it (general.file_type: Q4_K_M, Q4_1, F16, ...): a quantized file
// mixes tensor types (Gemma 3 270M's Q4_K_M keeps its embedding, the
// largest tensor, in Q8_0), so the type with the most elements would
// mislabel it. A file without the key, or with a type ollama's table does
// not name, gets that type instead. llama.cpp marks a guessed type with
// 1024 (LLAMA_FTYPE_GUESSED).
func fileType(kv ggml.KV, elems map[string]uint64) string {
	if v, ok := kv["general.file_type"].(uint32); ok {
		if name := ggml.FileType(v &^ 1024).String(); name != "unknown" {
			return name
		}
	}
	return mostElements(elems)
}

func mostElements(m map[string]uint64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	best := ""
	for _, k := range keys {
		if best == "" || m[k] > m[best] {
			best = k
		}
	}
	return best
}

// TokenizerSHA256 identifies a tokenizer by what decides how text becomes
// ids: the model kind, the pre-tokenizer, the tokens, their types and the
// merges. Each part is named and length-prefixed so no two tokenizers
// collide by concatenation.
func TokenizerSHA256(model, pre string, tokens, merges []string, types []int32) string {
	h := sha256.New()
	typeStrings := make([]string, len(types))
	for i, t := range types {
		typeStrings[i] = fmt.Sprint(t)
	}
	writeField(h, "model", []string{model})
	writeField(h, "pre", []string{pre})
	writeField(h, "tokens", tokens)
	writeField(h, "merges", merges)
	writeField(h, "token_type", typeStrings)
	return hex.EncodeToString(h.Sum(nil))
}

func writeField(h hash.Hash, name string, vals []string) {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(vals)))
	h.Write([]byte(name))
	h.Write(n[:])
	for _, v := range vals {
		binary.LittleEndian.PutUint64(n[:], uint64(len(v)))
		h.Write(n[:])
		h.Write([]byte(v))
	}
}

func fileSHA256(f *os.File) (string, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// SpecialTokens lists the texts of a vocabulary's control and user-defined
// tokens (token types as in tokenizer.ggml.token_type): what llama.cpp may
// match in text by itself, which the text preparation has to know.
func SpecialTokens(tokens []string, types []int32) (control, user []string) {
	for i, t := range types {
		switch {
		case i >= len(tokens):
		case t == TokenControl:
			control = append(control, tokens[i])
		case t == TokenUserDefined:
			user = append(user, tokens[i])
		}
	}
	return control, user
}
