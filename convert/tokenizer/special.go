package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
)

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

// special writes BOS, EOS and the unknown token, and decides Spec.AddBOS.
// The GGUF's BOS is exactly the tokenizer's bos_token: absent when it is
// null, so runner.ReadInfo reports none (llama.cpp keeps an internal
// default, used only when it adds special tokens, which udgam-ci never
// asks it to).
func (c *conv) special() error {
	tc, err := readTokenizerConfig(c.fsys)
	if err != nil {
		return err
	}
	ids := map[string]int{}
	for _, key := range []string{"bos_token", "eos_token"} {
		text, from, ok, err := tc.token(key)
		if err != nil {
			return err
		}
		if !ok {
			where := "tokenizer_config.json and special_tokens_map.json do not name one"
			if from != "" {
				where = from + " sets it to null"
			}
			c.logf("%s: none (%s)", key, where)
			continue
		}
		id, found := c.ids[text]
		if !found {
			return fmt.Errorf("%s: %s %q is not a token of the vocabulary", from, key, text)
		}
		ids[key] = id
		c.logf("%s: %q id %d (from %s)", key, text, id, from)
	}
	if id, ok := ids["bos_token"]; ok {
		c.kv["tokenizer.ggml.bos_token_id"] = uint32(id)
	}
	if id, ok := ids["eos_token"]; ok {
		c.kv["tokenizer.ggml.eos_token_id"] = uint32(id)
	}
	if c.tj != nil && c.tj.Model.UnkToken != nil {
		if id, ok := c.ids[*c.tj.Model.UnkToken]; ok {
			c.kv["tokenizer.ggml.unknown_token_id"] = uint32(id)
		}
	}

	bos, hasBOS := ids["bos_token"]
	addBOS := false
	how := "the tokenizer has no BOS"
	if hasBOS {
		addBOS, how = c.postProcessorAddsBOS(bos, tc)
		if v, set := tc.addBOSToken(); set && v != addBOS {
			c.bosMismatch(v, addBOS, how)
		}
	}
	c.spec.AddBOS = addBOS
	c.kv["tokenizer.ggml.add_bos_token"] = addBOS
	c.kv["tokenizer.ggml.add_eos_token"] = false
	c.logf("reference adds BOS with special tokens: %v (%s)", addBOS, how)
	return c.chatTemplate(tc)
}

// postProcessorAddsBOS reads tokenizer.json's post-processor: a
// TemplateProcessing whose single-sequence template starts with the BOS.
// Without tokenizer.json, the slow tokenizer's add_bos_token decides.
func (c *conv) postProcessorAddsBOS(bos int, tc *tokenizerConfig) (bool, string) {
	if c.tj == nil {
		if v, set := tc.addBOSToken(); set {
			return v, "tokenizer_config.json add_bos_token"
		}
		return false, "no tokenizer.json post-processor and no add_bos_token"
	}
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
	procs := []json.RawMessage{c.tj.PostProcessor}
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
		if len(pp.Single) > 0 && pp.Single[0].SpecialToken != nil {
			st := pp.SpecialTokens[pp.Single[0].SpecialToken.ID]
			if len(st.IDs) == 1 && st.IDs[0] == bos {
				return true, "the post-processor's template starts with it"
			}
		}
		return false, "the post-processor's template does not start with it"
	}
	return false, "the post-processor adds no template"
}
