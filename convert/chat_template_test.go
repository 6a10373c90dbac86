package convert_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/udgamlabs/udgam-ci/convert"
	"github.com/udgamlabs/udgam-ci/convert/converttest"
	"github.com/udgamlabs/udgam-ci/runner"
)

// A checkpoint's chat template travels into the GGUF, so the run header
// can record its hash (runner.Info.ChatTemplateSHA256); one without has
// none (issue 28).
func TestChatTemplateHashReachesTheModel(t *testing.T) {
	t.Parallel()
	const tmpl = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}"
	for _, with := range []bool{false, true} {
		dir := t.TempDir()
		if _, err := converttest.Small.Write(dir); err != nil {
			t.Fatal(err)
		}
		if with {
			path := filepath.Join(dir, "tokenizer_config.json")
			cfg := map[string]any{}
			if b, err := os.ReadFile(path); err == nil {
				if err := json.Unmarshal(b, &cfg); err != nil {
					t.Fatal(err)
				}
			}
			cfg["chat_template"] = tmpl
			b, _ := json.Marshal(cfg)
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		out := filepath.Join(t.TempDir(), "m.gguf")
		if _, err := convert.Dir(dir, out, convert.Options{}); err != nil {
			t.Fatal(err)
		}
		info, err := runner.ReadInfo(out)
		if err != nil {
			t.Fatal(err)
		}
		want := ""
		if with {
			want = runner.ChatTemplateSHA256(tmpl)
		}
		if info.ChatTemplateSHA256 != want {
			t.Errorf("chat template %v: hash %q, want %q", with, info.ChatTemplateSHA256, want)
		}
	}
}
