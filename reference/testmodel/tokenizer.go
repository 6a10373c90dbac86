package testmodel

import (
	"fmt"

	"github.com/ollama/ollama/fs/ggml"
)

// The byte-level tokenizer written into every GGUF here: llama.cpp's "gpt2"
// (BPE) model with no merges, so each byte stays its own token.
const (
	tokenizerModel = "gpt2"
	// tokenizerPre is SmolLM2's pre-tokenizer. Without merges the split
	// into words cannot join bytes, so any known one gives the same ids.
	tokenizerPre = "smollm"
	bosText      = "<|endoftext|>"
)

// llama.cpp's token types (llama_token_type).
const (
	tokenNormal  int32 = 1
	tokenControl int32 = 3
)

// gpt2ByteRunes maps each byte to the printable character GPT-2's byte-level
// BPE stores it as: printable Latin-1 bytes stand for themselves, the rest
// take the code points from 256 up, in byte order.
func gpt2ByteRunes() [256]rune {
	var m [256]rune
	next := rune(256)
	for b := range 256 {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		if printable {
			m[b] = rune(b)
		} else {
			m[b] = next
			next++
		}
	}
	return m
}

// byteVocab lists the tokens of a vocabulary of size n >= 257: the 256 bytes
// with id = byte value, BOS, then padding tokens no text can produce.
func byteVocab(n int) (tokens []string, types []int32) {
	runes := gpt2ByteRunes()
	tokens = make([]string, 0, n)
	types = make([]int32, 0, n)
	for _, r := range runes {
		tokens = append(tokens, string(r))
		types = append(types, tokenNormal)
	}
	tokens = append(tokens, bosText)
	types = append(types, tokenControl)
	for i := ByteVocab; i < n; i++ {
		// Control tokens are never matched in text tokenised without
		// special tokens, so these stay unreachable.
		tokens = append(tokens, fmt.Sprintf("<pad_%d>", i))
		types = append(types, tokenControl)
	}
	return tokens, types
}

// tokenizerKV is the tokenizer part of a GGUF's metadata.
func tokenizerKV(kv ggml.KV, vocab int) {
	tokens, types := byteVocab(vocab)
	kv["tokenizer.ggml.model"] = tokenizerModel
	kv["tokenizer.ggml.pre"] = tokenizerPre
	kv["tokenizer.ggml.tokens"] = tokens
	kv["tokenizer.ggml.token_type"] = types
	// llama.cpp requires the key for BPE, empty or not.
	kv["tokenizer.ggml.merges"] = []string{}
	kv["tokenizer.ggml.bos_token_id"] = uint32(BOS)
	kv["tokenizer.ggml.eos_token_id"] = uint32(BOS)
	kv["tokenizer.ggml.add_bos_token"] = true
	kv["tokenizer.ggml.add_eos_token"] = false
}
