package runner

import (
	"reflect"
	"testing"

	"github.com/udgamlabs/udgam-ci/ggufspec/tokspec"
)

// Tokenizers are compared by what tokenizes, field by field: udgam-ci's own
// record, which only its converter writes, is no reason to refuse a file
// llama.cpp's converter made from the same checkpoint (issue 40), and a
// refusal names what differs.
func TestTokenizerDiff(t *testing.T) {
	t.Parallel()
	tokens, merges := []string{"a", "b", "ab", "<s>"}, []string{"a b"}
	types := []int32{1, 1, 1, 3}
	special := map[string]any{"tokenizer.ggml.bos_token_id": uint32(3), "tokenizer.ggml.add_bos_token": false}
	info := func(f TokenizerFields, spec *tokspec.Spec) Info {
		return Info{VocabSize: len(tokens), Tokenizer: f, TokenizerSpec: spec, TokenizerSHA256: WithSpec("h", map[bool]string{true: "spec"}[spec != nil])}
	}
	withPre := func(i Info, pre string) Info {
		i.TokenizerPre = pre
		return i
	}
	base := NewTokenizerFields("gpt2", "smollm", tokens, merges, nil, types, special)
	rec := &tokspec.Spec{Source: "tokenizer.json"}
	for _, tc := range []struct {
		name string
		a, b Info
		want []string
	}{
		{"same, one with udgam-ci's record", info(base, rec), info(base, nil), nil},
		{"other merges", info(base, nil), info(NewTokenizerFields("gpt2", "smollm", tokens, []string{"b a"}, nil, types, special), nil), []string{"merges"}},
		{"other pre-tokenizer and BOS", info(base, nil), info(NewTokenizerFields("gpt2", "gpt2", tokens, merges, nil, types,
			map[string]any{"tokenizer.ggml.bos_token_id": uint32(0), "tokenizer.ggml.add_bos_token": false}), nil), []string{"pre-tokenizer", "special tokens"}},
		// SmolLM2's file from llama.cpp's converter against a reference
		// whose tokenizer.json lost its Digits step: the names say which.
		{"pre-tokenizer named", withPre(info(base, nil), "smollm"), withPre(info(NewTokenizerFields("gpt2", "gpt-2", tokens, merges, nil, types, special), nil), "gpt-2"),
			[]string{`pre-tokenizer ("smollm" vs "gpt-2")`}},
		// llama.cpp's converter writes a padding and an unknown id and the
		// default flags; udgam-ci's leaves them out: the same ids.
		{"padding, BPE unknown id and written defaults", info(base, nil), info(NewTokenizerFields("gpt2", "smollm", tokens, merges, nil, types,
			map[string]any{"tokenizer.ggml.bos_token_id": uint32(3), "tokenizer.ggml.add_bos_token": false, "tokenizer.ggml.padding_token_id": uint32(2),
				"tokenizer.ggml.unknown_token_id": uint32(0), "tokenizer.ggml.add_eos_token": false, "tokenizer.ggml.add_space_prefix": false}), nil), nil},
		{"other token types", info(base, nil), info(NewTokenizerFields("gpt2", "smollm", tokens, merges, nil, []int32{1, 1, 1, 4}, special), nil), []string{"token types"}},
		{"other scores", info(base, nil), info(NewTokenizerFields("gpt2", "smollm", tokens, merges, []float32{0, 0, 1, 0}, types, special), nil), []string{"scores"}},
		{"two records that differ", info(base, rec), info(base, &tokspec.Spec{Source: "tokenizer.json", Normalizer: []byte(`{"type":"NFC"}`)}), []string{"udgam-ci tokenizer record"}},
		{"no fields: by hash", Info{TokenizerSHA256: "x"}, Info{TokenizerSHA256: "y"}, []string{"tokenizer hash"}},
	} {
		if got := TokenizerDiff(tc.a, tc.b); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
