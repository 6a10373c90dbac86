package evals

import (
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
)

func TestCheckSecondBOS(t *testing.T) {
	t.Parallel()
	llama3 := runner.Info{BOS: 128000, BOSText: "<|begin_of_text|>"}
	spm := runner.Info{BOS: 1, BOSText: "<s>"}
	for _, tc := range []struct {
		info   runner.Info
		addBOS bool
		text   string
		refuse bool
	}{
		{spm, true, "<s>Question: 1+1?", true},
		{llama3, true, "<|begin_of_text|>Hello", true},
		{spm, false, "<s>Question: 1+1?", false}, // BOS not added: the text's own is the only one
		{spm, true, "Question: <s> in the middle", false},
		{spm, true, " <s>", false},
		{runner.Info{BOS: -1}, true, "<s>", false}, // no BOS
		{spm, true, "Plain text", false},
	} {
		err := CheckSecondBOS(tc.addBOS, tc.info, tc.text)
		if (err != nil) != tc.refuse {
			t.Errorf("CheckSecondBOS(%v, %q, %q) = %v, want refusal %v", tc.addBOS, tc.info.BOSText, tc.text, err, tc.refuse)
		}
		if err != nil && !strings.Contains(err.Error(), tc.info.BOSText) {
			t.Errorf("error %q does not name the BOS literal", err)
		}
	}
}

// The header says no template is applied and records the chat template's
// hash when the model has one.
func TestHeaderTemplate(t *testing.T) {
	t.Parallel()
	for _, hash := range []string{"", runner.ChatTemplateSHA256("{{ messages }}")} {
		h, err := NewHeader(runfile.TestProbes, runner.Info{Path: "m.gguf", BOS: 1, ChatTemplateSHA256: hash, Dtype: "F16", TokenizerSHA256: "t"},
			HeaderOptions{Dataset: runfile.Dataset{Name: "d", SHA256: "s", Count: 1}})
		if err != nil {
			t.Fatal(err)
		}
		if h.Settings.Template != runfile.TemplateNone || h.Settings.ChatTemplateSHA256 != hash {
			t.Errorf("settings template %q chat template %q, want %q %q", h.Settings.Template, h.Settings.ChatTemplateSHA256, runfile.TemplateNone, hash)
		}
	}
	if len(runner.ChatTemplateSHA256("x")) != 64 {
		t.Error("chat template hash is not a hex SHA-256")
	}
}

// --add-bos auto on a tokenizer that does not add its BOS itself
// (SmolLM2-Instruct: <|im_start|>, add_bos_token false) tells the user;
// nothing to tell otherwise (issue 40).
func TestBOSNote(t *testing.T) {
	t.Parallel()
	smol := runner.Info{BOS: 1, BOSText: "<|im_start|>", AddBOS: false}
	for _, tc := range []struct {
		mode string
		info runner.Info
		want string
	}{
		{BOSAuto, smol, `BOS "<|im_start|>" (id 1)`},
		{"", smol, "add_bos_token false"},
		{BOSYes, smol, ""},
		{BOSNo, smol, ""},
		{BOSAuto, runner.Info{BOS: 1, BOSText: "<s>", AddBOS: true}, ""},
		{BOSAuto, runner.Info{BOS: -1}, ""},
	} {
		got := BOSNote(tc.mode, tc.info)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("mode %q, %+v: %q, want %q", tc.mode, tc.info, got, tc.want)
		}
	}
}
