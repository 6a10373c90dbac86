// Package evals holds what both tests share: run headers built from the
// model's description, the BOS convention, progress output, seeded
// sampling and sharding, the resumable record loop and the merging of
// shard files.
package evals

import (
	"fmt"
	"strings"

	"github.com/udgamlabs/udgam-ci/runner"
)

// BOS modes as the user asks for them (--add-bos).
const (
	BOSAuto = "auto" // BOS first when the tokenizer has one
	BOSYes  = "yes"  // BOS first; an error when the tokenizer has none
	BOSNo   = "no"   // never BOS
)

// BOSModes lists the modes, the default (BOSAuto) first.
var BOSModes = []string{BOSAuto, BOSYes, BOSNo}

// ResolveBOS turns a BOS mode into whether BOS is put first. "yes" on a
// tokenizer without BOS is an error rather than a silent "no".
func ResolveBOS(mode string, info runner.Info) (bool, error) {
	switch mode {
	case BOSAuto, "":
		return info.HasBOS(), nil
	case BOSYes:
		if !info.HasBOS() {
			return false, fmt.Errorf("--add-bos yes: the tokenizer of %s has no BOS token", modelLabel(info))
		}
		return true, nil
	case BOSNo:
		return false, nil
	}
	return false, fmt.Errorf("BOS mode %q: want %s or %s", mode, strings.Join(BOSModes[:len(BOSModes)-1], ", "), BOSModes[len(BOSModes)-1])
}

// BOSNote tells the user, as scoring starts, that --add-bos auto puts a
// BOS first that the tokenizer itself does not add: its GGUF says
// add_bos_token false (SmolLM2-Instruct's <|im_start|>), as does
// transformers' tokenizer(text), which gives no BOS. udgam-ci's
// convention (BOS whenever the tokenizer has one, the header records it)
// stands; the note says how to score as transformers tokenizes. "" when
// there is nothing to tell.
func BOSNote(mode string, info runner.Info) string {
	if (mode != BOSAuto && mode != "") || !info.HasBOS() || info.AddBOS {
		return ""
	}
	return fmt.Sprintf("--add-bos auto puts BOS %q (id %d) before every text, although this tokenizer does not add it itself (add_bos_token false: transformers' tokenizer(text) gives no BOS); the run header records it. --add-bos no scores as the tokenizer tokenizes", info.BOSText, info.BOS)
}

func modelLabel(info runner.Info) string {
	switch {
	case info.Path != "":
		return info.Path
	case info.Name != "":
		return info.Name
	}
	return "the model"
}

// CheckSecondBOS refuses text that starts with the BOS token's literal
// ("<s>", "<|begin_of_text|>") when BOS is put first: the model would then
// read BOS twice (or BOS and then its text), which silently lowers its
// scores. Both tests ask it about every text before anything is scored.
func CheckSecondBOS(addBOS bool, info runner.Info, text string) error {
	if !addBOS || info.BOSText == "" || !strings.HasPrefix(text, info.BOSText) {
		return nil
	}
	return fmt.Errorf("the text starts with the BOS token %q, and scoring already puts BOS first: it would be read twice, which lowers the score; remove it from the text, or score with --add-bos no", info.BOSText)
}
