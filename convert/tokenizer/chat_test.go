package tokenizer

import (
	"strings"
	"testing"
	"testing/fstest"
)

// bosTemplate is a post-processor that puts <s> (id 1) first.
var bosTemplate = map[string]any{"type": "TemplateProcessing",
	"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": "<s>", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
	"special_tokens": map[string]any{"<s>": map[string]any{"id": "<s>", "ids": []int{1}, "tokens": []string{"<s>"}}},
}

// A tokenizer whose post-processor adds BOS where tokenizer_config.json
// says add_bos_token false is reported as a warning at conversion; the
// reverse, and agreement, are not warnings.
func TestBOSAgainstConfigWarns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		post     any
		addBOS   bool
		warnings int
	}{
		{"adds against config", bosTemplate, false, 1},
		{"adds as config says", bosTemplate, true, 0},
		{"config asks, tokenizer does not", nil, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tj := spmTokenizer(legacySPM, nil, []string{"▁ a", "a b", "ab c"})
			tj["post_processor"] = tc.post
			res, err := Convert(files(t, tj, map[string]any{"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": tc.addBOS}), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Warnings) != tc.warnings {
				t.Fatalf("warnings %q, want %d", res.Warnings, tc.warnings)
			}
			if tc.warnings > 0 && (!strings.Contains(res.Warnings[0], "add_bos_token false") || !strings.Contains(strings.Join(res.Report, "\n"), "WARNING: "+res.Warnings[0])) {
				t.Errorf("warning %q, report %q", res.Warnings[0], res.Report)
			}
		})
	}
}

// The chat template travels into the GGUF under llama.cpp's key, from
// chat_template.jinja first, else tokenizer_config.json (a string or the
// "default" of named templates); none when neither has one.
func TestChatTemplateCarried(t *testing.T) {
	t.Parallel()
	named := []any{map[string]any{"name": "tool_use", "template": "T"}, map[string]any{"name": "default", "template": "D"}}
	for _, tc := range []struct {
		name   string
		config any
		jinja  string
		want   any
	}{
		{"string", "{{ messages }}", "", "{{ messages }}"},
		{"named", named, "", "D"},
		{"jinja file wins", "{{ old }}", "{{ new }}", "{{ new }}"},
		{"none", nil, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			config := map[string]any{"bos_token": "<s>", "eos_token": "</s>"}
			if tc.config != nil {
				config["chat_template"] = tc.config
			}
			fsys := files(t, spmTokenizer(legacySPM, nil, []string{"▁ a", "a b", "ab c"}), config)
			if tc.jinja != "" {
				fsys["chat_template.jinja"] = &fstest.MapFile{Data: []byte(tc.jinja)}
			}
			res, err := Convert(fsys, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got, ok := res.KV[ChatTemplateKey]; got != tc.want && !(tc.want == nil && !ok) {
				t.Errorf("%s = %v, want %v", ChatTemplateKey, got, tc.want)
			}
		})
	}
	if _, err := Convert(files(t, spmTokenizer(legacySPM, nil, []string{"▁ a", "a b", "ab c"}), map[string]any{"chat_template": 7}), Options{}); err == nil || !strings.Contains(err.Error(), "chat_template") {
		t.Errorf("a chat_template of 7: %v", err)
	}
}
