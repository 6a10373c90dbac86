package hfprep

import (
	"encoding/json"
	"testing"
)

// TestNormalizers: each normalizer on a text that shows what it does.
func TestNormalizers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, json, in, want string
	}{
		{"NFC", `{"type":"NFC"}`, "e\u0301 \u2126 \u212b", "\u00e9 \u03a9 \u00c5"},
		{"NFD", `{"type":"NFD"}`, "\u00e9", "e\u0301"},
		{"NFKC", `{"type":"NFKC"}`, "ﬁ①ｆ", "fi1f"},
		{"NFKD", `{"type":"NFKD"}`, "\u00c5ﬁ", "A\u030afi"},
		{"lowercase", `{"type":"Lowercase"}`, "HeLLo ÀΣ İ", "hello àσ i\u0307"},
		{"strip accents after NFD", `{"type":"Sequence","normalizers":[{"type":"NFD"},{"type":"StripAccents"}]}`, "café naïve", "cafe naive"},
		{"replace string", `{"type":"Replace","pattern":{"String":" "},"content":"▁"}`, " a  b", "▁a▁▁b"},
		{"replace regex", `{"type":"Replace","pattern":{"Regex":" {2,}"},"content":" "}`, "a    b  c d", "a b c d"},
		{"replace with nothing", `{"type":"Replace","pattern":{"String":"x"},"content":""}`, "xaxbx", "ab"},
		{"prepend", `{"type":"Prepend","prepend":"▁"}`, "a", "▁a"},
		{"prepend leaves empty text", `{"type":"Prepend","prepend":"▁"}`, "", ""},
		{"strip", `{"type":"Strip","strip_left":true,"strip_right":true}`, " \t a b \u3000", "a b"},
		{"strip right", `{"type":"Strip","strip_left":false,"strip_right":true}`, "  a  ", "  a"},
		{"bert", `{"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":true,"strip_accents":null,"lowercase":true}`,
			"Héllo\tWORLD\x00 中文", "hello world  中  文 "},
		{"bert keeps accents", `{"type":"BertNormalizer","clean_text":false,"handle_chinese_chars":false,"strip_accents":false,"lowercase":true}`,
			"HÉ", "hé"},
		{"llama 2 sequence", `{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"},{"type":"Replace","pattern":{"String":" "},"content":"▁"}]}`,
			"Hi there", "▁Hi▁there"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, err := ParseNormalizer(json.RawMessage(c.json))
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := n.Normalize(c.in, true); got != c.want {
				t.Errorf("%q: got %q, want %q", c.in, got, c.want)
			}
		})
	}
}
