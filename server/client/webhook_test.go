package client

import "testing"

// TestSignature: GitHub's documented example of X-Hub-Signature-256
// (docs.github.com, "Validating webhook deliveries"), and what must fail.
func TestSignature(t *testing.T) {
	t.Parallel()
	secret, body := []byte("It's a Secret to Everybody"), []byte("Hello, World!")
	const want = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	if got := Sign(secret, body); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
	if err := VerifySignature(secret, body, want); err != nil {
		t.Errorf("the right signature: %v", err)
	}
	for _, c := range []struct {
		name         string
		secret, body string
		header       string
	}{
		{"wrong secret", "It's a secret to everybody", "Hello, World!", want},
		{"changed body", string(secret), "Hello, World?", want},
		{"no prefix", string(secret), "Hello, World!", want[len("sha256="):]},
		{"sha1", string(secret), "Hello, World!", "sha1=" + want[len("sha256="):]},
		{"empty", string(secret), "Hello, World!", ""},
	} {
		if err := VerifySignature([]byte(c.secret), []byte(c.body), c.header); err == nil {
			t.Errorf("%s: verified", c.name)
		}
	}
}
