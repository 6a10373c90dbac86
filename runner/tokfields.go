package runner

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"reflect"
	"slices"
)

// TokenizerFields hash, one by one, the parts of a GGUF's tokenizer that
// decide how text becomes ids, under the names a refusal prints. Any
// converter writes them (llama.cpp's, udgam-ci's), so two files from one
// checkpoint agree field by field whoever made them; udgam-ci's own record
// (general.udgam_ci.tokenizer) is not among them.
type TokenizerFields map[string]string

// tokenizerFieldOrder is the order in which differing fields are named.
var tokenizerFieldOrder = []string{"model", "pre-tokenizer", "vocabulary", "merges", "scores", "token types", "special tokens"}

// TokenizerSpecialKeys are the GGUF keys of the special token ids and of
// the flags that add them or a space prefix: what changes the ids of a
// text. Padding, separator and mask ids do not (llama.cpp's converter
// writes a padding id, udgam-ci's none), nor does a BPE vocabulary's
// unknown id (byte-level: every byte has a token).
var TokenizerSpecialKeys = []string{
	"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id",
	"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id",
	"tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token", "tokenizer.ggml.add_space_prefix",
}

// tokenizerDefaults are the values llama.cpp takes for an absent flag, so
// a file that writes the default and one that leaves it out agree.
var tokenizerDefaults = map[string]string{"tokenizer.ggml.add_eos_token": "false"}

// NewTokenizerFields hashes each field; special holds the value of each of
// TokenizerSpecialKeys the file has (absent keys are left out).
func NewTokenizerFields(model, pre string, tokens, merges []string, scores []float32, types []int32, special map[string]any) TokenizerFields {
	f := TokenizerFields{}
	sum := func(name string, vals []string) {
		h := sha256.New()
		writeField(h, name, vals)
		f[name] = hex.EncodeToString(h.Sum(nil))
	}
	sum("model", []string{model})
	sum("pre-tokenizer", []string{pre})
	sum("vocabulary", tokens)
	sum("merges", merges)
	bits := make([]string, len(scores))
	var b [4]byte
	for i, s := range scores {
		binary.LittleEndian.PutUint32(b[:], math.Float32bits(s))
		bits[i] = string(b[:])
	}
	sum("scores", bits)
	typ := make([]string, len(types))
	for i, t := range types {
		typ[i] = fmt.Sprint(t)
	}
	sum("token types", typ)
	var sp []string
	for _, k := range TokenizerSpecialKeys {
		v, ok := special[k]
		switch {
		case k == "tokenizer.ggml.unknown_token_id" && model == "gpt2":
			continue
		case k == "tokenizer.ggml.add_space_prefix":
			// llama.cpp's default: on for SentencePiece ("llama") only.
			if !ok {
				v, ok = model == "llama", true
			}
		case !ok && tokenizerDefaults[k] != "":
			v, ok = tokenizerDefaults[k], true
		}
		if ok {
			sp = append(sp, k+"="+fmt.Sprint(v))
		}
	}
	sum("special tokens", sp)
	return f
}

// TokenizerDiff names the fields in which two models' tokenizers differ,
// nil when they tokenize alike; a pre-tokenizer comes with both names
// (a's first), the one difference a name says all of. Where both carry udgam-ci's record and the
// records differ (other text preparation), the record is named too. Infos
// without fields (models not read from a GGUF) are compared by their
// tokenizer hashes.
func TokenizerDiff(a, b Info) []string {
	var d []string
	if a.Tokenizer == nil || b.Tokenizer == nil {
		if a.TokenizerSHA256 != b.TokenizerSHA256 {
			d = append(d, "tokenizer hash")
		}
	} else {
		for _, k := range tokenizerFieldOrder {
			switch {
			case a.Tokenizer[k] == b.Tokenizer[k]:
			case k == "pre-tokenizer" && a.TokenizerPre != b.TokenizerPre:
				d = append(d, fmt.Sprintf("%s (%q vs %q)", k, a.TokenizerPre, b.TokenizerPre))
			default:
				d = append(d, k)
			}
		}
	}
	if a.VocabSize != b.VocabSize && !slices.Contains(d, "vocabulary") {
		d = append(d, "vocabulary")
	}
	if a.TokenizerSpec != nil && b.TokenizerSpec != nil && !reflect.DeepEqual(a.TokenizerSpec, b.TokenizerSpec) {
		d = append(d, "udgam-ci tokenizer record")
	}
	return d
}
