package runfile

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
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
		// Issue 50: encoding/json matches keys in any case, the last of two winning.
		{"a record key in upper case", good + "\n" + strings.Replace(item, `"pred":0`, `"PRED":0`, 1), `line 2: record: key "PRED": the field is "pred" (keys are case-sensitive)`},
		{"a header key again in upper case", strings.Replace(good, `"id":"run-1"`, `"id":"run-1","ID":"run-2"`, 1) + "\n" + item, `line 1: header: key "ID": the field is "id"`},
		{"a nested key spelled with a long s", strings.Replace(good, `"name":"d"`, `"name":"d","\u017fmoke":true`, 1) + "\n" + item, `key "dataset.ſmoke": the field is "dataset.smoke"`},
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
		if err := checkKeys([]byte(ok), nil); err != nil {
			t.Fatalf("checkKeys(%s): %v", ok, err)
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

// TestCheckKeysIsLinear: the key check of every uploaded line costs in
// proportion to its length, for objects of many keys and for deep
// nesting alike: ten times the keys cost about ten times the CPU, never a
// hundred (each key compared with every earlier one), and a 16 MiB line
// of nested objects is checked within a bounded allocation (issue 50).
func TestCheckKeysIsLinear(t *testing.T) {
	// Not parallel: it reads the process's allocations.
	wide := func(n int) []byte {
		var b bytes.Buffer
		b.WriteString(`{"dataset":{"constant":{`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"t%d":1`, i)
		}
		b.WriteString(`}}}`)
		return b.Bytes()
	}
	cost := func(b []byte) time.Duration {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		start := threadCPU(t)
		for range 3 {
			if err := checkKeys(b, reflect.TypeFor[Header]()); err != nil {
				t.Fatal(err)
			}
		}
		return threadCPU(t) - start
	}
	small, large := cost(wide(20000)), cost(wide(200000))
	if large > 30*small+50*time.Millisecond {
		t.Errorf("200,000 keys cost %s of CPU, 20,000 keys %s: want about ten times", large, small)
	}
	deep := bytes.Repeat([]byte(`{"a":`), MaxLine/5)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	if err := checkKeys(deep, reflect.TypeFor[Header]()); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&ms)
	if got := ms.TotalAlloc - before; got > 64<<20 {
		t.Errorf("checking %d nested objects allocated %d MiB", MaxLine/5, got>>20)
	}
	if _, err := Read(bytes.NewReader(deep), "deep.jsonl"); err == nil || !strings.Contains(err.Error(), "exceeded max depth") {
		t.Errorf("Read of %d nested objects: %v, want the decoder's depth limit", MaxLine/5, err)
	}
}

// threadCPU is the CPU time the calling OS thread has used.
func threadCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &ru); err != nil {
		t.Skipf("no thread CPU time here: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
