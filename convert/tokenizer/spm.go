package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ollama/ollama/convert/sentencepiece"
)

// llama.cpp's SentencePiece tokenizer ("llama") turns spaces into "▁",
// optionally puts a "▁" before the text (tokenizer.ggml.add_space_prefix),
// and then, over the whole text, repeatedly merges the adjacent pair whose
// concatenation is the token with the highest score (the leftmost on a
// tie); characters left without a token become <0xNN> byte tokens.
//
// A Hugging Face tokenizer.json writes the same vocabulary as BPE with
// merges and byte_fallback. The two agree when every way llama.cpp could
// join two symbols into a token is a listed merge (completeness) and the
// merges' order is the order of their results' scores. Scores are derived
// from the merges: a token's score is minus the rank of the first merge
// that makes it.

var bytePiece = regexp.MustCompile(`^<0x[0-9A-F]{2}>$`)

// sentencePieceJSON converts a SentencePiece-style BPE tokenizer.json
// (byte fallback, "▁" for spaces) without tokenizer.model.
func (c *conv) sentencePieceJSON() error {
	m := c.tj.Model
	if m.IgnoreMerges {
		return fmt.Errorf("tokenizer.json: SentencePiece-style BPE with ignore_merges=true is not supported (llama.cpp's SentencePiece tokenizer always merges)")
	}
	byID, n, err := c.bpeJSON()
	if err != nil {
		return err
	}
	pairs := c.tj.merges
	if err := c.setVocab("tokenizer.json", byID, n, false); err != nil {
		return err
	}
	c.logf("tokenizer: SentencePiece BPE with byte fallback from tokenizer.json, %d tokens, scores from %d merges -> llama.cpp llama", n, len(pairs))
	c.types = make([]int32, n)
	for i := range c.types {
		c.types[i] = typeNormal
	}
	c.markAdded()
	if err := c.byteTokens("tokenizer.json"); err != nil {
		return err
	}
	if m.UnkToken != nil {
		if id, ok := c.ids[*m.UnkToken]; ok {
			c.types[id] = typeUnknown
		}
	}
	if err := c.scoresFromMerges(pairs); err != nil {
		return err
	}
	c.spec.Source, c.spec.Model, c.spec.GGUF, c.spec.Pre = "tokenizer.json", "BPE", "llama", "default"
	return c.spmWhitespace(false)
}

// byteTokens marks the 256 <0xNN> tokens llama.cpp's byte fallback needs.
func (c *conv) byteTokens(src string) error {
	for b := range 256 {
		name := fmt.Sprintf("<0x%02X>", b)
		id, ok := c.ids[name]
		if !ok {
			return fmt.Errorf("%s: byte fallback needs the token %s, which the vocabulary lacks", src, name)
		}
		c.types[id] = typeByte
	}
	return nil
}

// scoresFromMerges derives SentencePiece scores from BPE merges and checks
// that llama.cpp's merging by score gives the merges' result.
func (c *conv) scoresFromMerges(pairs [][2]string) error {
	type pair = [2]string
	rank := make(map[pair]int, len(pairs))
	first := make(map[string]int, len(pairs))
	for i, p := range pairs {
		for _, part := range []string{p[0], p[1], p[0] + p[1]} {
			if _, ok := c.ids[part]; !ok {
				return fmt.Errorf("tokenizer.json: merge %d %q %q: %q is not in the vocabulary", i, p[0], p[1], part)
			}
		}
		if _, ok := rank[p]; !ok {
			rank[p] = i
		}
		if _, ok := first[p[0]+p[1]]; !ok {
			first[p[0]+p[1]] = i
		}
	}
	// Completeness: llama.cpp joins any two adjacent symbols (tokens, or
	// single characters) whose concatenation is a token. Added tokens are
	// left out: the scoring side takes their literals out of the text
	// before llama.cpp sees it, except where a single_word token is not
	// matched.
	matched := map[int]bool{}
	for _, a := range c.added {
		matched[a.ID] = !a.SingleWord
	}
	var missing []string
	for id, t := range c.tokens {
		if matched[id] || len(t) < 2 {
			continue
		}
		for i := range t {
			if i == 0 {
				continue
			}
			x, y := t[:i], t[i:]
			if !c.symbol(x) || !c.symbol(y) {
				continue
			}
			if _, ok := rank[pair{x, y}]; !ok {
				missing = append(missing, fmt.Sprintf("%q+%q=%q", x, y, t))
			}
		}
	}
	if len(missing) > 0 {
		if err := c.refuse("tokenizer.json: %d ways llama.cpp's SentencePiece merging can form a token are not merges of the BPE model, so the two can split text differently: %s", len(missing), sample(missing, 5)); err != nil {
			return err
		}
	}
	// Order: a later merge of a token made earlier by another pair gets
	// the earlier merge's score in llama.cpp. It is a conflict when a merge
	// ranked between the two shares a symbol with it and makes a token
	// first made after the earlier one: Hugging Face does that merge first,
	// llama.cpp the other.
	byLeft := map[string][]int{}
	byRight := map[string][]int{}
	for i, p := range pairs {
		byLeft[p[0]] = append(byLeft[p[0]], i)
		byRight[p[1]] = append(byRight[p[1]], i)
	}
	c.scores = make([]float32, len(c.tokens))
	low := -float32(len(pairs) + 1)
	for id, t := range c.tokens {
		if r, ok := first[t]; ok {
			c.scores[id] = -float32(r)
		} else {
			c.scores[id] = low
		}
	}
	var other []string
	runs := map[rune]bool{} // conflicts that stay within runs of one character
	n := 0
	for rq, q := range pairs {
		fq := first[q[0]+q[1]]
		if fq == rq {
			continue
		}
		for _, rp := range append(byRight[q[0]], byLeft[q[1]]...) {
			p := pairs[rp]
			if rp <= fq || rp >= rq || first[p[0]+p[1]] <= fq {
				continue
			}
			n++
			if ch, ok := run(p[0] + p[1] + q[0] + q[1]); ok {
				runs[ch] = true
				continue
			}
			other = append(other, fmt.Sprintf("merge %d %q+%q before merge %d %q+%q", rp, p[0], p[1], rq, q[0], q[1]))
		}
	}
	if len(other) > 0 {
		return c.refuse("tokenizer.json: %d merges are ranked in an order llama.cpp's scores cannot follow, so the two can split text differently: %s", len(other), sample(other, 3))
	}
	if len(runs) == 0 {
		return nil
	}
	// Within runs of one character the outcome is checked directly: every
	// run up to twice the longest run token is split both ways.
	var chars []string
	longest := 0
	for ch := range runs {
		chars = append(chars, strconv.QuoteRune(ch))
		k := 1
		for ; c.symbol(strings.Repeat(string(ch), k+1)) && k < 1024; k++ {
		}
		limit := 2*k + 2
		longest = max(longest, limit)
		for m := 2; m <= limit; m++ {
			text := strings.Repeat(string(ch), m)
			hf, cpp := bpeMerge(text, rank), c.scoreMerge(text)
			if !slices.Equal(hf, cpp) {
				return c.refuse("tokenizer.json: a run of %d %q is split %q by the BPE merges and %q by llama.cpp's scores", m, ch, hf, cpp)
			}
		}
	}
	sort.Strings(chars)
	c.logf("merge order: %d merges are ranked in an order llama.cpp's scores do not follow, all within runs of %s; every run of up to %d splits the same both ways", n, strings.Join(chars, ", "), longest)
	return nil
}

// run reports whether s repeats one character.
func run(s string) (rune, bool) {
	var first rune
	for i, r := range s {
		if i == 0 {
			first = r
		} else if r != first {
			return 0, false
		}
	}
	return first, s != ""
}

// bpeMerge splits text as Hugging Face's BPE does: the pair of lowest
// rank first, the leftmost among equals.
func bpeMerge(text string, rank map[[2]string]int) []string {
	syms := strings.Split(text, "")
	for {
		best, bestRank := -1, 0
		for i := 0; i+1 < len(syms); i++ {
			if r, ok := rank[[2]string{syms[i], syms[i+1]}]; ok && (best < 0 || r < bestRank) {
				best, bestRank = i, r
			}
		}
		if best < 0 {
			return syms
		}
		syms[best] += syms[best+1]
		syms = slices.Delete(syms, best+1, best+2)
	}
}

// scoreMerge splits text as llama.cpp's SentencePiece tokenizer does: the
// adjacent pair that makes the highest-scoring token first, the leftmost
// among equals.
func (c *conv) scoreMerge(text string) []string {
	syms := strings.Split(text, "")
	for {
		best := -1
		var bestScore float32
		for i := 0; i+1 < len(syms); i++ {
			if id, ok := c.ids[syms[i]+syms[i+1]]; ok && (best < 0 || c.scores[id] > bestScore) {
				best, bestScore = i, c.scores[id]
			}
		}
		if best < 0 {
			return syms
		}
		syms[best] += syms[best+1]
		syms = slices.Delete(syms, best+1, best+2)
	}
}

// spmWhitespace decides how spaces become "▁" and whether a "▁" goes
// before the text, from the normalizer and the pre-tokenizer; the
// normalizer steps before that are left to the scoring side. withModel:
// a tokenizer.model is converted with it.
func (c *conv) spmWhitespace(withModel bool) error {
	ns, ps := c.tj.normalizer, c.tj.preTokenizer
	isReplace := func(s step) bool { return s.Type == "Replace" && s.isString(" ") && deref(s.Content) == "▁" }
	isPrepend := func(s step) bool { return s.Type == "Prepend" && deref(s.Prepend) == "▁" }
	// The last one or two steps are llama.cpp's: Replace(" " -> "▁"),
	// and Prepend("▁") for add_space_prefix, in either order.
	rest, replace, prepend := ns, false, false
tail:
	for len(rest) > 0 {
		last := rest[len(rest)-1]
		switch {
		case isReplace(last) && !replace:
			replace = true
		case isPrepend(last) && !prepend:
			prepend = true
		default:
			break tail
		}
		rest = rest[:len(rest)-1]
	}
	config := fmt.Sprintf("normalizer %s, pre-tokenizer %s", describeAll(ns), describeAll(ps))
	ok := false
	switch {
	case replace && len(ps) == 0:
		ok = true
	case replace && !prepend && len(ps) == 1 && ps[0].Type == "Split" && ps[0].isString(" ") && !ps[0].Invert:
		// Splitting on " " after every " " became "▁" splits nothing.
		ok = true
	case !replace && !prepend && len(ps) == 1 && ps[0].Type == "Metaspace":
		s := ps[0]
		switch plain := s.Replacement == "▁" && s.Split != nil && !*s.Split; {
		case plain && s.PrependScheme == "never":
			ok = true
		case plain && s.PrependScheme == "first" && !withModel:
			// Llama 2 style tokenizer.json as transformers writes it: the
			// "▁" goes first only where the text does not start with a
			// space, and only before its first segment. llama.cpp's
			// add_space_prefix always puts one, so the scoring side puts
			// it in Go (runner/textprep).
			ok = true
			c.spec.SpacePrefixFirst = true
		case s.PrependScheme != "never":
			return c.refuseWhitespace(config + ": Metaspace puts \"▁\" first only when the text does not start with a space; llama.cpp's add_space_prefix always does (supported: prepend_scheme \"first\" with split=false, from tokenizer.json alone)")
		}
	}
	if !ok {
		if err := c.refuseWhitespace(config + ": not one that llama.cpp's SentencePiece tokenizer reproduces; supported: normalizer ending in Prepend(\"▁\") + Replace(\" \" -> \"▁\") with no pre-tokenizer, normalizer ending in Replace(\" \" -> \"▁\") with no pre-tokenizer or Split on \" \", or Metaspace(prepend_scheme=never or first, split=false)"); err != nil {
			return err
		}
	}
	c.spacePrefix = prepend
	c.logf("whitespace: %s -> llama.cpp add_space_prefix=%v%s", config, prepend, map[bool]string{true: ", a space before the first segment in Go"}[c.spec.SpacePrefixFirst])
	return c.goNormalizer(rest)
}

func (c *conv) refuseWhitespace(msg string) error {
	return c.refuse("tokenizer.json: whitespace handling: %s", msg)
}

// sentencePieceModel converts tokenizer.model (SentencePiece's protobuf),
// with tokenizer.json's added tokens and normalizer when it is there.
func (c *conv) sentencePieceModel() error {
	spm := c.spm
	ts := spm.GetTrainerSpec()
	if t := ts.GetModelType(); t != sentencepiece.TrainerSpec_BPE {
		return fmt.Errorf("tokenizer.model: SentencePiece model type %s is not supported: llama.cpp's SentencePiece tokenizer merges pieces by score, which reproduces BPE models only (a Unigram model needs its own segmentation)", t)
	}
	ns := spm.GetNormalizerSpec()
	if name := ns.GetName(); name != "identity" && len(ns.GetPrecompiledCharsmap()) > 0 {
		if err := c.refuse("tokenizer.model: normalizer %q (a precompiled character map) is not applied by llama.cpp's SentencePiece tokenizer", name); err != nil {
			return err
		}
	}
	if ns.GetRemoveExtraWhitespaces() {
		if err := c.refuse("tokenizer.model: remove_extra_whitespaces=true is not applied by llama.cpp's SentencePiece tokenizer"); err != nil {
			return err
		}
	}
	byID := map[int]string{}
	pieces := spm.GetPieces()
	var userDefined []addedToken
	for i, p := range pieces {
		byID[i] = p.GetPiece()
		if p.GetType() == sentencepiece.ModelProto_SentencePiece_USER_DEFINED {
			userDefined = append(userDefined, addedToken{ID: i, Content: p.GetPiece()})
		}
	}
	added := userDefined
	if c.tj != nil {
		added = c.tj.AddedTokens
		if c.tj.Model.Type == "BPE" {
			for id, t := range c.tj.vocab {
				if id < len(pieces) && byID[id] != t {
					return fmt.Errorf("tokenizer.model and tokenizer.json disagree: piece %d is %q in one and %q in the other", id, byID[id], t)
				}
			}
		}
	}
	byID, n, err := c.mergeAdded("tokenizer.model", byID, len(pieces), added)
	if err != nil {
		return err
	}
	if err := c.setVocab("tokenizer.model", byID, n, false); err != nil {
		return err
	}
	c.types = make([]int32, n)
	c.scores = make([]float32, n)
	for i := range n {
		c.types[i] = typeNormal
		if i < len(pieces) {
			c.types[i] = int32(pieces[i].GetType())
			c.scores[i] = pieces[i].GetScore()
		}
	}
	c.markAdded()
	for i := range min(n, len(pieces)) {
		switch c.types[i] {
		case typeUserDefined:
			c.types[i] = typeNormal // matched in Go, as an added token
		case typeByte, typeUnknown:
			c.types[i] = int32(pieces[i].GetType())
		}
	}
	if ts.GetByteFallback() {
		if err := c.byteTokens("tokenizer.model"); err != nil {
			return err
		}
	}
	c.spec.Source, c.spec.Model, c.spec.GGUF, c.spec.Pre = "tokenizer.model", "SentencePiece BPE", "llama", "default"
	c.logf("tokenizer: SentencePiece BPE from tokenizer.model, %d pieces (byte fallback %v) -> llama.cpp llama", len(pieces), ts.GetByteFallback())
	if c.tj != nil {
		if err := c.spmWhitespace(true); err != nil {
			return err
		}
		if c.spacePrefix != ns.GetAddDummyPrefix() {
			return fmt.Errorf("tokenizer.model add_dummy_prefix=%v, but tokenizer.json's normalizer and pre-tokenizer %s a \"▁\" first", ns.GetAddDummyPrefix(), map[bool]string{true: "put", false: "do not put"}[c.spacePrefix])
		}
		return nil
	}
	c.spacePrefix = ns.GetAddDummyPrefix()
	c.logf("whitespace: tokenizer.model add_dummy_prefix=%v -> llama.cpp add_space_prefix=%v", c.spacePrefix, c.spacePrefix)
	return nil
}

// goNormalizer checks the normalizer steps llama.cpp does not apply and
// records them for the scoring side, which applies them in Go.
func (c *conv) goNormalizer(ss []step) error {
	if len(ss) == 0 {
		c.logf("normalizer applied in Go: none")
		return nil
	}
	var raws []json.RawMessage
	for _, s := range ss {
		if !goNormalizers[s.Type] || (s.Type == "Replace" && (s.Pattern == nil || s.Pattern.String == nil)) {
			if err := c.refuse("tokenizer.json: normalizer step %s is applied neither by llama.cpp nor by udgam-ci; supported in Go: NFC, NFD, NFKC, NFKD, Lowercase, StripAccents, Prepend, Replace with a String pattern", s.describe()); err != nil {
				return err
			}
			continue
		}
		raws = append(raws, s.raw)
	}
	if len(raws) == 0 {
		return nil
	}
	var b []byte
	var err error
	if len(raws) == 1 {
		b = raws[0]
	} else {
		b, err = json.Marshal(map[string]any{"type": "Sequence", "normalizers": raws})
	}
	if err != nil {
		return fmt.Errorf("encode normalizer: %w", err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return fmt.Errorf("encode normalizer: %w", err)
	}
	c.spec.Normalizer = buf.Bytes()
	c.logf("normalizer applied in Go: %s", describeAll(ss))
	return nil
}

// goNormalizers are the tokenizer.json normalizer types the scoring side
// applies in Go.
var goNormalizers = map[string]bool{
	"NFC": true, "NFD": true, "NFKC": true, "NFKD": true,
	"Lowercase": true, "StripAccents": true, "Prepend": true, "Replace": true,
}

// normalizer handles a byte-level tokenizer's normalizer: llama.cpp's BPE
// applies none, so every step is the scoring side's.
func (c *conv) normalizer() error {
	return c.goNormalizer(c.tj.normalizer)
}
