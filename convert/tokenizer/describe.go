package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// describe writes a step in the short form error messages and the
// pre-tokenizer table use. Only fields that change ids are named.
func (s step) describe() string {
	b := func(p *bool, def bool) bool {
		if p == nil {
			return def
		}
		return *p
	}
	switch s.Type {
	case "ByteLevel":
		// Hugging Face's defaults: add_prefix_space and use_regex true.
		return fmt.Sprintf("ByteLevel(add_prefix_space=%v, use_regex=%v)", b(s.AddPrefixSpace, true), b(s.UseRegex, true))
	case "Digits":
		return fmt.Sprintf("Digits(individual_digits=%v)", s.IndividualDigits)
	case "Split":
		return fmt.Sprintf("Split(%s, behavior=%s, invert=%v)", s.pattern(), s.Behavior, s.Invert)
	case "Metaspace":
		return fmt.Sprintf("Metaspace(replacement=%q, prepend_scheme=%q, split=%v)", s.Replacement, s.PrependScheme, b(s.Split, true))
	case "Replace":
		return fmt.Sprintf("Replace(%s, content=%q)", s.pattern(), deref(s.Content))
	case "Prepend":
		return fmt.Sprintf("Prepend(%q)", deref(s.Prepend))
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(s.raw, &fields) == nil && len(fields) == 1 {
		return s.Type // NFC, Lowercase, ...
	}
	var buf bytes.Buffer
	if json.Compact(&buf, s.raw) != nil {
		return string(s.raw)
	}
	return buf.String()
}

func (s step) pattern() string {
	switch {
	case s.Pattern == nil:
		return "pattern=none"
	case s.Pattern.Regex != nil:
		return "Regex=" + strconv.Quote(*s.Pattern.Regex)
	case s.Pattern.String != nil:
		return "String=" + strconv.Quote(*s.Pattern.String)
	}
	return "pattern=none"
}

// isString reports whether the step's pattern is the literal s.
func (s step) isString(lit string) bool {
	return s.Pattern != nil && s.Pattern.String != nil && *s.Pattern.String == lit && s.Pattern.Regex == nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// describeAll joins a pipeline's steps.
func describeAll(ss []step) string {
	if len(ss) == 0 {
		return "none"
	}
	d := make([]string, len(ss))
	for i, s := range ss {
		d[i] = s.describe()
	}
	return strings.Join(d, " + ")
}

// sample lists up to n items.
func sample(items []string, n int) string {
	if len(items) > n {
		return strings.Join(items[:n], ", ") + fmt.Sprintf(", ... %d more", len(items)-n)
	}
	return strings.Join(items, ", ")
}

func hexBytes(bs []int) string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = fmt.Sprintf("0x%02X", b)
	}
	return strings.Join(out, " ")
}
