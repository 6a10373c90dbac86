package runfile

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestReadRefusesHostileLines: numbers below their meaning, bytes that
// are not UTF-8, a repeated header key and an over-long line are refused
// with the line and field named, never stored rewritten; a BOM is not data
// and is dropped (issue 32).
func TestReadRefusesHostileLines(t *testing.T) {
	t.Parallel()
	hdr := func(edit func(*Header)) string {
		h := header(TestProbes)
		edit(&h)
		b, err := Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	item := `{"id":"i1","type":"add","level":1,"logprobs":[-1,-2],"pred":0,"answer":0,"correct":true}`
	good := hdr(func(*Header) {})
	tests := []struct {
		name, body, want string
	}{
		{"negative dataset.count", hdr(func(h *Header) { h.Dataset.Count = -1 }) + "\n" + item, "line 1: header: dataset.count -1"},
		{"negative settings.window", hdr(func(h *Header) { h.Settings.Window = -1 }) + "\n" + item, "settings.window -1"},
		{"negative settings.stride", hdr(func(h *Header) { h.Settings.Stride = -5 }) + "\n" + item, "settings.stride -5"},
		{"negative runtime.threads", hdr(func(h *Header) { h.Runtime.Threads = -1 }) + "\n" + item, "runtime.threads -1"},
		{"bos_id below -1", hdr(func(h *Header) { h.Settings.BOSID = -2 }) + "\n" + item, "settings.bos_id -2"},
		{"negative item level", good + "\n" + strings.Replace(item, `"level":1`, `"level":-7`, 1), "line 2: item i1: level -7"},
		{"invalid UTF-8 in a record id", good + "\n" + strings.Replace(item, `"i1"`, "\"i\xff1\"", 1), "line 2: not valid UTF-8 (byte 9)"},
		{"invalid UTF-8 in dataset.name", strings.Replace(good, `"name":"d"`, "\"name\":\"d\xc3\"", 1) + "\n" + item, "line 1: not valid UTF-8"},
		{"repeated header id", strings.Replace(good, `"id":"run-1"`, `"id":"run-1","id":"run-2"`, 1) + "\n" + item, `line 1: header: key "id" appears twice`},
		{"repeated nested key", strings.Replace(good, `"name":"d"`, `"name":"d","name":"e"`, 1) + "\n" + item, `key "dataset.name" appears twice`},
		{"repeated key spelled with an escape", strings.Replace(good, `"id":"run-1"`, `"id":"run-1","\u0069d":"run-2"`, 1) + "\n" + item, `key "id" appears twice`},
		{"repeated record key", good + "\n" + strings.Replace(item, `"pred":0`, `"pred":0,"pred":1`, 1), `line 2: record: key "pred" appears twice`},
		{"line over MaxLine", good + "\n" + `{"id":"` + strings.Repeat("x", MaxLine) + `"}`, "line 2: longer than the limit of 16777216 bytes (16 MiB)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.body), "run.jsonl")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Read: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// A BOM before the header is dropped; the same values are read.
	r, err := Read(strings.NewReader("\xEF\xBB\xBF"+good+"\n"+item+"\n"), "bom.jsonl")
	if err != nil || r.Header.ID != "run-1" || len(r.Items) != 1 {
		t.Fatalf("Read with a BOM: %v %+v", err, r)
	}
	// Arrays of objects with the same keys are not repeats.
	for _, ok := range []string{`{"a":[{"k":1},{"k":2}],"b":{"k":3}}`, `{"s":"a \" , \"s\":","t":"{\"s\":1}","u":[1,"x",{"s":2}]}`} {
		if err := repeatedKey([]byte(ok)); err != nil {
			t.Fatalf("repeatedKey(%s): %v", ok, err)
		}
	}
}

// TestReadWithRefusesOverTheBound: a reader's record bound stops at the
// first record over it, naming the bound, as a TooManyError.
func TestReadWithRefusesOverTheBound(t *testing.T) {
	t.Parallel()
	b, _ := Marshal(header(TestProbes))
	var body bytes.Buffer
	body.Write(b)
	for i := range 5 {
		body.WriteString("\n" + strings.Replace(`{"id":"iN","type":"add","level":1,"logprobs":[-1,-2],"pred":0,"answer":0,"correct":true}`, "N", string(rune('a'+i)), 1))
	}
	_, err := ReadWith(&body, "up", Options{MaxRecords: 3, Limit: "the most this server takes"})
	var tm *TooManyError
	if !errors.As(err, &tm) || tm.Line != 5 || !strings.Contains(err.Error(), "up line 5: over 3 records, the most this server takes") {
		t.Fatalf("ReadWith over its bound: %v", err)
	}
}
