package tokenizer

import "github.com/udgamlabs/udgam-ci/ggufspec"

// ChatTemplateKey is the GGUF key of the tokenizer's chat template, as
// llama.cpp's own converter writes it. udgam-ci never applies it (both
// tests score raw text); it is carried so that a run can record its hash
// and a changed template shows between revisions.
const ChatTemplateKey = ggufspec.ChatTemplateKey

// carryChatTemplate reports the chat template read (readChatTemplate),
// which result writes as it is.
func (c *conv) carryChatTemplate() {
	if t := c.chatTemplate; t.from != "" {
		c.logf("chat template: from %s (%d bytes; recorded, never applied)", t.from, len(t.text))
	}
}
