package tokenizer

import (
	"fmt"
	"slices"
	"strings"
)

// A preTokenizer is a Hugging Face pre-tokenizer configuration that one of
// llama.cpp's pre-tokenizer types reproduces exactly: the same splits of
// every text, so that byte-level BPE merges the same words. Steps are in
// the form step.describe writes. TestPreTokenizersMatchLlamaCpp checks each
// entry against the vendored llama-vocab.cpp; TestHuggingFaceIDs checks the
// ids of real tokenizers against transformers.js.
type preTokenizer struct {
	Name  string   // tokenizer.ggml.pre
	Steps []string // Hugging Face pre_tokenizer, flattened
	// IgnoreMerges is the BPE model's ignore_merges that goes with it:
	// llama.cpp sets it from the type (llama3 and tekken only).
	IgnoreMerges bool
	// Regexes are the splits llama.cpp applies for the type, as
	// llama-vocab.cpp lists them (its hand-written splitters implement
	// these); Original is the regex its comment names as tokenizer.json's.
	Regexes  []string
	Original string
	// Inexact, when set, says where llama.cpp's type splits otherwise: the
	// configuration is refused with it, and converted anyway
	// (--allow-unverified-tokenizer) with this type rather than the default.
	Inexact string
}

// The regexes of Hugging Face configurations, as tokenizer.json writes them.
const (
	llama3Regex = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	qwen2Regex  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// gpt2Split is llama.cpp's GPT-2 split. Hugging Face's ByteLevel regex
	// (use_regex=true) adds a final `|\s+`; llama.cpp keeps text that no
	// alternative matches as a piece of its own, which is what `\s+`
	// matches there (whitespace before a non-space that ` ?\p{L}+` and the
	// others do not take), so the splits are the same.
	gpt2Split = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`
	// llama.cpp writes (?i:'s|...) as (?:'[sS]|...), which matches the same.
	llama3Split = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	qwen2Split  = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// DeepSeek-V3's three splits, the same text in tokenizer.json and in
	// llama.cpp (the \r and \n are the characters themselves in both).
	deepseekV3Digits = "\\p{N}{1,3}"
	deepseekV3CJK    = "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"
	deepseekV3Words  = "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"
	// o200k (GPT-4o, gpt-oss) as tokenizer.json writes it; llama.cpp
	// rewrites the letter classes with look-aheads (o200kSplit).
	o200kRegex = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	o200kSplit = `[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

func splitStep(regex string) string {
	return step{Type: "Split", Pattern: &struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	}{Regex: &regex}, Behavior: "Isolated"}.describe()
}

func byteLevelStep(useRegex bool) string {
	f := false
	return step{Type: "ByteLevel", AddPrefixSpace: &f, UseRegex: &useRegex}.describe()
}

// preTokenizers is the table of supported configurations.
var preTokenizers = []preTokenizer{
	{Name: "gpt-2", Steps: []string{byteLevelStep(true)}, Regexes: []string{gpt2Split}},
	{Name: "smollm", Steps: []string{step{Type: "Digits", IndividualDigits: true}.describe(), byteLevelStep(true)},
		Regexes: []string{`\p{N}`, gpt2Split}},
	{Name: "llama-bpe", Steps: []string{splitStep(llama3Regex), byteLevelStep(false)}, IgnoreMerges: true,
		Regexes: []string{llama3Split}, Original: llama3Regex},
	{Name: "qwen2", Steps: []string{splitStep(qwen2Regex), byteLevelStep(false)},
		Regexes: []string{qwen2Split}, Original: qwen2Regex},
	// Llama 3's split without ignore_merges: llama.cpp's dbrx type.
	{Name: "dbrx", Steps: []string{splitStep(llama3Regex), byteLevelStep(false)},
		Regexes: []string{llama3Split}},
	{Name: "deepseek-v3", Steps: []string{splitStep(deepseekV3Digits), splitStep(deepseekV3CJK), splitStep(deepseekV3Words), byteLevelStep(false)},
		Regexes: []string{deepseekV3Digits, deepseekV3CJK, deepseekV3Words}},
	// o200k (GPT-4o; Xenova's file writes the split as Removed, inverted,
	// which for a regex matching every character is the same).
	{Name: "gpt-4o", Steps: []string{invertedRemoveStep(o200kRegex), byteLevelStep(false)},
		Regexes: []string{o200kSplit}, Original: o200kRegex, Inexact: o200kInexact},
	{Name: "gpt-4o", Steps: []string{splitStep(o200kRegex), byteLevelStep(false)},
		Regexes: []string{o200kSplit}, Original: o200kRegex, Inexact: o200kInexact},
}

// o200kInexact is why o200k is refused: measured with Hugging Face
// tokenizers on the built-in texts (TestTokenizersReference).
const o200kInexact = "llama.cpp's gpt-4o pre-tokenizer reads o200k's letter classes as \"a letter not a-z\" and \"a letter not A-Z\" and leaves combining marks (\\p{M}) out of words, so text with marks (Devanagari, Thai) splits otherwise than Hugging Face's tokenizer"

// invertedRemoveStep is Split(regex, Removed, invert=true): the matches
// kept, the text between them dropped.
func invertedRemoveStep(regex string) string {
	return step{Type: "Split", Pattern: &struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	}{Regex: &regex}, Behavior: "Removed", Invert: true}.describe()
}

// lookupPre finds the llama.cpp type of a pre-tokenizer configuration. A
// type known to split otherwise (Inexact) comes with the refusal, so that a
// conversion told to go on uses it rather than the default.
func lookupPre(ss []step, ignoreMerges bool) (string, error) {
	got := describeAll(ss)
	for _, p := range preTokenizers {
		if strings.Join(p.Steps, " + ") == got && p.IgnoreMerges == ignoreMerges {
			if p.Inexact != "" {
				return p.Name, fmt.Errorf("pre-tokenizer %s is refused: %s", got, p.Inexact)
			}
			return p.Name, nil
		}
	}
	var supported []string
	for _, p := range preTokenizers {
		supported = append(supported, fmt.Sprintf("  %s: %s (model ignore_merges=%v)", p.Name, strings.Join(p.Steps, " + "), p.IgnoreMerges))
	}
	return "", fmt.Errorf("pre-tokenizer %s (model ignore_merges=%v) matches none of llama.cpp's pre-tokenizer types exactly; supported:\n%s",
		got, ignoreMerges, strings.Join(supported, "\n"))
}

// byteLevelJSON converts a byte-level BPE tokenizer.json.
func (c *conv) byteLevelJSON() error {
	m := c.tj.Model
	byID, n, err := c.bpeJSON()
	if err != nil {
		return err
	}
	if err := c.byteLevelVocab("tokenizer.json", byID, n, c.tj.merges, m.UnkToken == nil && !m.ByteFallback); err != nil {
		return err
	}
	c.spec.Source, c.spec.Model = "tokenizer.json", "BPE"
	ss := c.tj.preTokenizer
	pre, err := lookupPre(ss, m.IgnoreMerges)
	if err != nil {
		if err := c.refuse("%v", err); err != nil {
			return err
		}
		if pre == "" {
			pre = "default"
		}
	}
	c.setPre(pre, describeAll(ss))
	return c.normalizer()
}

// bpeJSON takes a tokenizer.json BPE model's vocabulary with the added
// tokens (id -> text, and the size), refusing what llama.cpp's BPE lacks.
func (c *conv) bpeJSON() (map[int]string, int, error) {
	m := c.tj.Model
	if deref(m.ContinuingSubwordPrefix) != "" || deref(m.EndOfWordSuffix) != "" || m.Dropout != nil {
		return nil, 0, fmt.Errorf("tokenizer.json: BPE with continuing_subword_prefix %q, end_of_word_suffix %q or dropout is not supported", deref(m.ContinuingSubwordPrefix), deref(m.EndOfWordSuffix))
	}
	return c.mergeAdded("tokenizer.json", c.tj.vocab, c.tj.n, c.tj.AddedTokens)
}

// byteLevelFiles converts a GPT-2 style vocab.json and merges.txt (a
// checkpoint without tokenizer.json): the slow GPT2Tokenizer, whose split
// is ByteLevel's regex.
func (c *conv) byteLevelFiles() error {
	added, err := c.config.addedTokens(c.vocab.ids)
	if err != nil {
		return err
	}
	byID, n, err := c.mergeAdded("vocab.json", c.vocab.byID, c.vocab.n, added)
	if err != nil {
		return err
	}
	if err := c.byteLevelVocab("vocab.json", byID, n, c.vocab.merges, false); err != nil {
		return err
	}
	c.spec.Source, c.spec.Model = "vocab.json+merges.txt", "BPE"
	aps := c.config.AddPrefixSpace
	t := true
	ss := []step{{Type: "ByteLevel", AddPrefixSpace: &aps, UseRegex: &t}}
	pre, err := lookupPre(ss, false)
	if err != nil {
		if err := c.refuse("%v", err); err != nil {
			return err
		}
		pre = "default"
	}
	c.setPre(pre, describeAll(ss)+" (GPT2Tokenizer)")
	return nil
}

func (c *conv) setPre(pre, config string) {
	c.spec.Pre = pre
	c.logf("pre-tokenizer: %s -> llama.cpp %q", config, pre)
}

// byteLevelVocab fills the vocabulary of a byte-level BPE. dropsUnknown:
// the model has no unk_token, so Hugging Face drops a byte without a token.
func (c *conv) byteLevelVocab(src string, byID map[int]string, n int, pairs [][2]string, dropsUnknown bool) error {
	// A byte-level BPE forms tokens only by its merges, so an id no token
	// has can hold a placeholder no merge forms, of the unused type.
	if err := c.setVocab(src, byID, n, true); err != nil {
		return err
	}
	c.logf("tokenizer: byte-level BPE from %s, %d tokens, %d merges -> llama.cpp gpt2", src, n, len(pairs))
	c.types = make([]int32, n)
	for i := range c.types {
		c.types[i] = typeNormal
	}
	c.markAdded()
	for _, id := range c.gaps {
		c.types[id] = typeUnused
	}
	if len(c.gaps) > 0 {
		c.logf("%d ids no token has (%d..%d) hold unused placeholders [GAP<id>], never matched in text", len(c.gaps), c.gaps[0], c.gaps[len(c.gaps)-1])
	}
	// Every byte must have its token, or llama.cpp aborts on it. Without
	// an unk_token Hugging Face's BPE drops such a byte (SmolLM2's
	// vocabulary lacks 21): recorded, and text holding one is refused when
	// scored (runner/textprep); with one, the byte is its unknown token,
	// which is refused here.
	var missing []int
	for b, ch := range byteChars() {
		if _, ok := c.ids[ch]; !ok {
			if !dropsUnknown {
				return fmt.Errorf("%s: byte-level vocabulary has no token for byte 0x%02X (%q)", src, b, ch)
			}
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		c.spec.MissingBytes = missing
		c.logf("bytes without a token, which Hugging Face drops: %d (%s); text holding one is refused when scored", len(missing), hexBytes(missing))
	}
	c.merges = make([]string, len(pairs))
	for i, p := range pairs {
		for _, part := range []string{p[0], p[1], p[0] + p[1]} {
			if _, ok := c.ids[part]; !ok {
				return fmt.Errorf("%s: merge %d %q %q: %q is not in the vocabulary", src, i, p[0], p[1], part)
			}
		}
		if id := c.ids[p[0]+p[1]]; slices.Contains(c.gaps, id) {
			return fmt.Errorf("%s: merge %d %q %q forms the placeholder of unused id %d", src, i, p[0], p[1], id)
		}
		c.merges[i] = p[0] + " " + p[1]
	}
	c.spec.GGUF = "gpt2"
	return nil
}

// byteChars is GPT-2's byte-to-character table of byte-level BPE:
// printable bytes stand for themselves, the others for 256 and up.
func byteChars() []string {
	printable := func(b int) bool {
		return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
	}
	chars := make([]string, 256)
	next := 256
	for b := range 256 {
		if printable(b) {
			chars[b] = string(rune(b))
		} else {
			chars[b] = string(rune(next))
			next++
		}
	}
	return chars
}
