package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestServeWebhookFlags: the secret comes from its file (newline trimmed)
// or the environment, and a webhook without one is a usage error.
func TestServeWebhookFlags(t *testing.T) {
	t.Parallel()
	bg := context.Background()
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e, _, _ := serverTestEnv(bg, map[string]string{"UDGAM_WEBHOOK_SECRET": "from-env"})
	o, err := parseServe(e, []string{"--webhook-url", "http://127.0.0.1:9/h", "--webhook-secret-file", file})
	if err != nil || string(o.WebhookSecret) != "from-file" {
		t.Errorf("secret file: %q %v", o.WebhookSecret, err)
	}
	if o, err = parseServe(e, []string{"--webhook-url", "http://127.0.0.1:9/h"}); err != nil || string(o.WebhookSecret) != "from-env" {
		t.Errorf("secret from the environment: %q %v", o.WebhookSecret, err)
	}
	e, _, _ = serverTestEnv(bg, nil)
	if _, err := parseServe(e, []string{"--webhook-url", "http://127.0.0.1:9/h"}); err == nil {
		t.Error("a webhook without a secret was accepted")
	}
	if _, err := parseServe(e, []string{"--webhook-secret-file", filepath.Join(t.TempDir(), "none")}); err == nil {
		t.Error("a missing secret file was accepted")
	}
}
