package runner

import (
	"context"
	"path/filepath"

	"github.com/udgamlabs/udgam-ci/ggufspec/tokspec"
)

// Request asks for next-token log-probabilities along one or more token
// sequences that share a prefix. The prefix is evaluated once; each branch
// continues it. A plain sequence is a request with no prefix and one branch.
type Request struct {
	Prefix   []int32
	Branches []Branch
}

// Branch is one continuation of a request's prefix.
type Branch struct {
	Tokens []int32
	// Positions index the concatenation Prefix+Tokens: for each p (p >= 1)
	// the result holds log p(seq[p] | seq[:p]) in nats.
	Positions []int
}

// Result holds, per branch, the log-probabilities in the order of Positions.
type Result [][]float64

// Scorer returns log-probabilities for batches of requests.
type Scorer interface {
	Score(ctx context.Context, reqs []Request) ([]Result, error)
}

// Tokenizer turns text into token ids without adding special tokens, so the
// caller decides about BOS.
type Tokenizer interface {
	Tokenize(text string) ([]int32, error)
}

// Info describes a loaded model: what a run header records.
type Info struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	// Fingerprint hashes what in the file can change a score (Fingerprint):
	// two files with one fingerprint score alike.
	Fingerprint string         `json:"fingerprint,omitempty"`
	Name        string         `json:"name,omitempty"`
	Arch        string         `json:"arch"`
	Params      uint64         `json:"params"`
	Dtype       string         `json:"dtype"`        // the file type as llama.cpp names it (Q4_K_M), else the most common tensor type by elements
	TensorTypes map[string]int `json:"tensor_types"` // type -> tensor count
	// TensorParams is the mix behind Dtype: type -> parameters (elements)
	// held in that type.
	TensorParams  map[string]uint64 `json:"tensor_params,omitempty"`
	VocabSize     int               `json:"vocab_size"`
	ContextLength int               `json:"context_length"`
	// MaxPositions, when not 0, is how many positions the model has learned
	// embeddings for (GPT-2's position table): no sequence may be longer,
	// where rotary models would only extrapolate.
	MaxPositions    int    `json:"max_positions,omitempty"`
	BOS             int32  `json:"bos"` // -1 when none
	EOS             int32  `json:"eos"` // -1 when none
	AddBOS          bool   `json:"add_bos"`
	TokenizerModel  string `json:"tokenizer_model"`
	TokenizerPre    string `json:"tokenizer_pre,omitempty"` // tokenizer.ggml.pre
	TokenizerSHA256 string `json:"tokenizer_sha256"`        // covers TokenizerSpec too
	// Tokenizer hashes the tokenizer field by field (TokenizerDiff): what
	// an artifact audit compares. Not part of the header.
	Tokenizer TokenizerFields `json:"-"`
	// ChatTemplateSHA256 hashes tokenizer.chat_template, "" when the GGUF
	// has none. Recorded in run headers; never applied.
	ChatTemplateSHA256 string `json:"chat_template_sha256,omitempty"`
	// BOSText is the BOS token's text (e.g. "<s>"), "" without BOS: text
	// that starts with it would put a second BOS after the one scoring adds.
	BOSText string `json:"-"`
	// AddSpacePrefix says llama.cpp puts a space (SentencePiece's dummy
	// prefix) before the text it tokenizes, so the first token's piece
	// starts with a space that is not in the text.
	AddSpacePrefix bool `json:"add_space_prefix,omitempty"`
	// TokenizerSpec is the record udgam-ci's converter writes (tokspec.Key):
	// how text must be prepared so the ids equal Hugging Face's. Nil when
	// the GGUF was not converted by udgam-ci.
	TokenizerSpec *tokspec.Spec `json:"tokenizer_spec,omitempty"`
	// ControlTokens are the texts of the vocabulary's control tokens, which
	// llama.cpp never matches in text; textprep uses them where the GGUF
	// has no TokenizerSpec. Not part of the header.
	ControlTokens []string `json:"-"`
	// UserTokens are the texts of user-defined tokens, which llama.cpp
	// matches in any text it is given, special tokens parsed or not.
	UserTokens []string `json:"-"`
}

// RunName is the model name a run records when none is given: the GGUF's
// general.name, else its file's name (udgam-ci's converter writes none).
func (i Info) RunName() string {
	if i.Name == "" && i.Path != "" {
		return filepath.Base(i.Path)
	}
	return i.Name
}

// TrainedLength is the longest sequence the model has positions for: its
// context_length, or its learned position table when that is shorter (0:
// unknown). llama.cpp reads GPT-2-style tables unchecked, so a sequence
// beyond one would abort the process.
func (i Info) TrainedLength() int {
	if i.MaxPositions > 0 && (i.ContextLength <= 0 || i.MaxPositions < i.ContextLength) {
		return i.MaxPositions
	}
	return i.ContextLength
}

// HasBOS reports whether the tokenizer defines a BOS token.
func (i Info) HasBOS() bool { return i.BOS >= 0 }

// Model is what the tests need from an engine: its description, its
// tokenizer and its scorer. runner.Model (llama.cpp) implements it, and so
// do the pure-Go reference models used in tests.
type Model interface {
	Tokenizer
	Scorer
	Info() Info
}

// Quantized says whether any of the model's tensors is in a quantized type
// (not F32, F16 or BF16): llama.cpp then rounds the activations to 8 bits
// before multiplying them.
func (i Info) Quantized() bool {
	for t := range i.TensorTypes {
		switch t {
		case "F32", "F16", "BF16":
		default:
			return true
		}
	}
	return false
}
