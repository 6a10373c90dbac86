package tokenizer

import "fmt"

// special decides BOS, EOS and the unknown token, and Spec.AddBOS. The
// GGUF's BOS is exactly the tokenizer's bos_token: absent when it is null,
// so runner.ReadInfo reports none (llama.cpp keeps an internal default,
// used only when it adds special tokens, which udgam-ci never asks it to).
func (c *conv) special() error {
	ids := map[string]int{}
	for _, key := range []string{"bos_token", "eos_token"} {
		text, from, ok, err := c.config.token(key)
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
		c.bos = id
	}
	if id, ok := ids["eos_token"]; ok {
		c.eos = id
	}
	if c.tj != nil && c.tj.Model.UnkToken != nil {
		if id, ok := c.ids[*c.tj.Model.UnkToken]; ok {
			c.unk = id
		}
	}

	bos, hasBOS := ids["bos_token"]
	addBOS := false
	how := "the tokenizer has no BOS"
	if hasBOS {
		addBOS, how = c.postProcessorAddsBOS(bos)
		if v, set := c.config.addBOSToken(); set && v != addBOS {
			c.bosMismatch(v, addBOS, how)
		}
	}
	c.spec.AddBOS = addBOS
	c.logf("reference adds BOS with special tokens: %v (%s)", addBOS, how)
	c.carryChatTemplate()
	return nil
}

// postProcessorAddsBOS reads tokenizer.json's post-processor: a
// TemplateProcessing whose single-sequence template starts with the BOS.
// Without tokenizer.json, the slow tokenizer's add_bos_token decides.
func (c *conv) postProcessorAddsBOS(bos int) (bool, string) {
	if c.tj == nil {
		if v, set := c.config.addBOSToken(); set {
			return v, "tokenizer_config.json add_bos_token"
		}
		return false, "no tokenizer.json post-processor and no add_bos_token"
	}
	switch t := c.tj.template; {
	case !t.found:
		return false, "the post-processor adds no template"
	case len(t.firstIDs) == 1 && t.firstIDs[0] == bos:
		return true, "the post-processor's template starts with it"
	}
	return false, "the post-processor's template does not start with it"
}

// bosMismatch reports a tokenizer_config.json add_bos_token that the
// tokenizer.json post-processor contradicts. The post-processor decides
// (it is what transformers runs), so scoring puts BOS first as it does;
// when it adds BOS against the config, the model may not have been
// trained with one, and a user who also adds BOS by hand gets two: a
// warning, not a note.
func (c *conv) bosMismatch(config, adds bool, how string) {
	if adds && !config {
		msg := fmt.Sprintf("the tokenizer adds BOS (%s) where tokenizer_config.json says add_bos_token false; scoring follows the tokenizer and puts BOS first (--add-bos no scores without it)", how)
		c.warnings = append(c.warnings, msg)
		c.logf("WARNING: %s", msg)
		return
	}
	c.logf("note: tokenizer_config.json add_bos_token is %v, but %s; the tokenizer.json post-processor decides", config, how)
}
