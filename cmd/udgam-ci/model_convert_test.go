package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/convert/converttest"
	"github.com/udgamlabs/udgam-ci/runner"
)

func TestModelConvertCommand(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	if _, err := converttest.Small.Write(src); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "m.gguf")
	e, stdout, stderr := actionTestEnv(nil)
	if code := run(e, []string{"model", "convert", src, "--out", out, "--dtype", "f16"}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	info, err := runner.ReadInfo(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{info.SHA256, "llama f16", "tokenizer: byte-level BPE from tokenizer.json", `-> llama.cpp "smollm"`,
		"normalizer applied in Go: none", `bos_token: "<|endoftext|>" id 261`, "reference adds BOS with special tokens: false",
		`added tokens matched in text (in Go, as Hugging Face does): 1 ("<|endoftext|>")`} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout does not say %q:\n%s", want, stdout)
		}
	}

	// An existing GGUF is not overwritten without --force, as every
	// command that writes a file (issue 32: convert silently replaced it).
	code, _, errs := runBinary(t, src, nil, "model", "convert", src, "--out", out)
	if again, _ := runner.ReadInfo(out); code != 1 || !strings.Contains(errs, out+" exists (use --force to overwrite it)") || again.SHA256 != info.SHA256 {
		t.Errorf("convert over an existing GGUF: exit %d, stderr %q, sha256 %s (was %s)", code, errs, again.SHA256, info.SHA256)
	}

	// An unknown pre-tokenizer is refused, and converted when allowed.
	var tj map[string]any
	b, _ := os.ReadFile(filepath.Join(src, "tokenizer.json"))
	if err := json.Unmarshal(b, &tj); err != nil {
		t.Fatal(err)
	}
	tj["pre_tokenizer"] = map[string]any{"type": "Whitespace"}
	b, _ = json.Marshal(tj)
	if err := os.WriteFile(filepath.Join(src, "tokenizer.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	e, _, stderr = actionTestEnv(nil)
	if code := run(e, []string{"model", "convert", src, "--out", out, "--force"}); code != 1 || !strings.Contains(stderr.String(), "pre-tokenizer Whitespace (model ignore_merges=false) matches none") {
		t.Errorf("unknown pre-tokenizer: exit %d, stderr %q", code, stderr)
	}
	e, stdout, stderr = actionTestEnv(nil)
	if code := run(e, []string{"model", "convert", src, "--out", out, "--force", "--allow-unverified-tokenizer"}); code != 0 || !strings.Contains(stdout.String(), "UNVERIFIED: pre-tokenizer") {
		t.Errorf("allowed: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"model", "convert", src}, "--out is required"},
		{[]string{"model", "convert", "--out", out}, "give one checkpoint directory"},
	} {
		e, _, stderr := actionTestEnv(nil)
		if code := run(e, tt.args); code != 2 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%v: exit %d, stderr %q", tt.args, code, stderr)
		}
	}
}
