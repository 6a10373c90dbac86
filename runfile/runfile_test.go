package runfile

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func header(test string) Header {
	return Header{
		Schema: Schema, ID: "run-1", Test: test,
		Model:     Model{Name: "m", SHA256: "abc"},
		Dataset:   Dataset{Name: "d", SHA256: "ds", Count: 3},
		Settings:  Settings{AddBOS: true, BOSMode: "auto", BOSID: 1, Window: 2048, Stride: 1024, Dtype: "F32", TokenizerSHA256: "tok", Engine: "e"},
		StartedAt: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "run.jsonl")
	w, err := Create(path, header(TestFresh))
	if err != nil {
		t.Fatal(err)
	}
	docs := []Doc{
		{ID: "a", Source: "wiki", Bytes: 10, Tokens: 4, Bits: 8.5, Windows: 1},
		{ID: "b", Source: "arxiv", Bytes: 30, Tokens: 9, Bits: 20, Windows: 1},
	}
	for _, d := range docs {
		if err := w.Append(d); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	run, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Docs) != 2 || !reflect.DeepEqual(run.Docs[1], docs[1]) || run.Header.Settings != header(TestFresh).Settings {
		t.Fatalf("round trip: %+v", run)
	}
	s := SummarizeFresh(run.Docs)
	if want := 28.5 / 40; s.BPB != want || s.BySource["wiki"].BPB != 0.85 {
		t.Fatalf("bpb %v, want %v (a ratio of sums)", s.BPB, want)
	}
	if _, err := Create(path, header(TestFresh)); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("Create over an existing run: %v", err)
	}
}

func TestResumeCutsTornLine(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "run.jsonl")
	w, _ := Create(path, header(TestFresh))
	w.Append(Doc{ID: "a", Bytes: 1, Tokens: 1, Bits: 1})
	w.Close()
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"id":"b","byt`) // killed mid-write
	f.Close()

	w, run, err := Resume(path, header(TestFresh))
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Docs) != 1 || run.Docs[0].ID != "a" {
		t.Fatalf("resumed records: %+v", run.Docs)
	}
	w.Append(Doc{ID: "b", Bytes: 2, Tokens: 1, Bits: 1})
	w.Close()
	run, err = ReadFile(path)
	if err != nil || len(run.Docs) != 2 {
		t.Fatalf("after resume: %v %+v", err, run)
	}

	other := header(TestFresh)
	other.Settings.Window = 512
	if _, _, err := Resume(path, other); err == nil || !strings.Contains(err.Error(), "window: 2048 -> 512") {
		t.Fatalf("resume with another window: %v", err)
	}
}

func TestReadErrorsNameTheLine(t *testing.T) {
	t.Parallel()
	h := `{"schema":"udgam-ci.run/v1","id":"r","test":"fresh","model":{"name":"m"},"dataset":{"name":"d","sha256":"x","count":1},"settings":{"add_bos":true,"bos_mode":"auto","bos_id":1,"dtype":"F32","tokenizer_sha256":"t","engine":"e"},"runtime":{},"git":{"pr":null},"started_at":"2026-11-30T00:00:00Z"}`
	cases := []struct{ name, body, want string }{
		{"empty", "", "empty run file"},
		{"bad schema", strings.Replace(h, "run/v1", "run/v9", 1), "line 1: schema"},
		{"bad json", h + "\n{\"id\":", "line 2"},
		{"glued records", h + "\n{\"id\":\"a\",\"bytes\":1,\"tokens\":1,\"bits\":1}{\"id\":\"b\"}", "line 2"},
		{"item in a fresh run", h + "\n{\"id\":\"a\",\"type\":\"add\",\"logprobs\":[1,2]}", "line 2: not a fresh record"},
		{"negative bits", h + "\n{\"id\":\"a\",\"bytes\":1,\"tokens\":1,\"bits\":-1}", "line 2"},
		{"repeat", h + "\n{\"id\":\"a\",\"bytes\":1,\"tokens\":1,\"bits\":1}\n{\"id\":\"a\",\"bytes\":1,\"tokens\":1,\"bits\":1}", "line 3: record \"a\" repeats line 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(c.body), "x.jsonl")
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "x.jsonl") {
				t.Fatalf("got %v, want an error naming x.jsonl and %q", err, c.want)
			}
		})
	}
}

func TestItemValidate(t *testing.T) {
	t.Parallel()
	ok := Item{ID: "i", Logprobs: []float64{-1, -2}, Pred: 0, Answer: 0, Correct: true}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, it := range map[string]Item{
		"one choice":       {ID: "i", Logprobs: []float64{-1}},
		"pred out":         {ID: "i", Logprobs: []float64{-1, -2}, Pred: 2},
		"answer out":       {ID: "i", Logprobs: []float64{-1, -2}, Answer: -1},
		"correct disagree": {ID: "i", Logprobs: []float64{-1, -2}, Pred: 1, Answer: 0, Correct: true},
	} {
		if it.Validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestSummarizeProbes(t *testing.T) {
	t.Parallel()
	items := []Item{
		{ID: "1", Type: "add", Level: 1, Logprobs: []float64{0, -1, -1, -1}, Correct: true},
		{ID: "2", Type: "add", Level: 2, Logprobs: []float64{0, -1, -1, -1}, Pred: 1, Tie: true},
		{ID: "3", Type: "compare", Level: 1, Logprobs: []float64{0, -1}, Correct: true},
	}
	s := SummarizeProbes(items)
	if s.Items != 3 || s.Correct != 2 || s.Ties != 1 {
		t.Fatalf("%+v", s.ProbeGroup)
	}
	if want := 100 * (0.25 + 0.25 + 0.5) / 3; s.Chance != want {
		t.Fatalf("chance %v, want %v", s.Chance, want)
	}
	if s.ByType["add"].Accuracy != 50 || s.ByLevel["add/2"].Accuracy != 0 {
		t.Fatalf("groups: %+v %+v", s.ByType["add"], s.ByLevel["add/2"])
	}
}

func TestSettingsDiff(t *testing.T) {
	t.Parallel()
	a, b := header(TestFresh), header(TestFresh)
	b.Settings.AddBOS = false
	b.Runtime.Threads = 8
	b.Runtime.CPU = "x86-64-v3"
	d := SettingsDiff(a, b)
	if len(d) != 3 || d[0].Key != "add_bos" || !d[0].Judged || d[1].Key != "threads" || d[1].Judged || d[2].Key != "cpu" || d[2].Judged {
		t.Fatalf("diff: %+v", d)
	}
	if m := Mismatch(a, b); len(m) != 1 {
		t.Fatalf("mismatch: %+v", m)
	}
	if len(SettingsDiff(a, a)) != 0 {
		t.Fatal("identical headers differ")
	}
}

// TestRecordRules: every meaningless record is refused by Validate, the
// one check every reader (server, compare, push) goes through.
func TestRecordRules(t *testing.T) {
	t.Parallel()
	okDocs := []Doc{
		{ID: "d", Bytes: 10, Tokens: 3, Bits: 7, Windows: 1},
		{ID: "one-unscored-token", FirstUnscored: true, TextBytes: 4, Windows: 1},
		{ID: "certain", Bytes: 10, Tokens: 3, Bits: 0},
	}
	for _, d := range okDocs {
		if err := d.Validate(); err != nil {
			t.Errorf("%s: %v", d.ID, err)
		}
	}
	for name, d := range map[string]Doc{
		"bits over no bytes":      {ID: "d", Bytes: 0, Tokens: 1, Bits: 3},
		"bytes with no tokens":    {ID: "d", Bytes: 500, Tokens: 0, Bits: 0},
		"bits with no tokens":     {ID: "d", Bytes: 0, Tokens: 0, Bits: 1},
		"negative bytes":          {ID: "d", Bytes: -1, Tokens: 1, Bits: 1},
		"negative tokens":         {ID: "d", Bytes: 1, Tokens: -1, Bits: 1},
		"negative bits":           {ID: "d", Bytes: 1, Tokens: 1, Bits: -1},
		"NaN bits":                {ID: "d", Bytes: 1, Tokens: 1, Bits: math.NaN()},
		"infinite bits":           {ID: "d", Bytes: 1, Tokens: 1, Bits: math.Inf(1)},
		"bits that overflow sums": {ID: "d", Bytes: 1, Tokens: 1, Bits: 1e308},
		"bytes that overflow":     {ID: "d", Bytes: math.MaxInt64 / 2, Tokens: 1, Bits: 1},
		"more bytes than text":    {ID: "d", Bytes: 9, Tokens: 1, Bits: 1, TextBytes: 8},
	} {
		if err := d.Validate(); err == nil || !strings.Contains(err.Error(), "document d") {
			t.Errorf("%s: %v, want an error naming document d", name, err)
		}
	}
	for name, it := range map[string]Item{
		"pred not the argmax": {ID: "i", Logprobs: []float64{-1, -2}, Pred: 1, Answer: 1, Correct: true},
		"tie not marked":      {ID: "i", Logprobs: []float64{-1, -1}, Pred: 0, Answer: 0, Correct: true},
		"tie invented":        {ID: "i", Logprobs: []float64{-1, -2}, Answer: 0, Correct: true, Tie: true},
		"positive logprob":    {ID: "i", Logprobs: []float64{5, -2}, Answer: 0, Correct: true},
		"NaN logprob":         {ID: "i", Logprobs: []float64{-1, math.NaN()}, Answer: 0, Correct: true},
		"huge logprob":        {ID: "i", Logprobs: []float64{-1, -1e300}, Answer: 0, Correct: true},
		"norm of other size":  {ID: "i", Logprobs: []float64{-1, -2}, Norm: []float64{-1}, Answer: 0, Correct: true},
		"negative tokens":     {ID: "i", Logprobs: []float64{-1, -2}, Answer: 0, Correct: true, Tokens: -3},
	} {
		if err := it.Validate(); err == nil || !strings.Contains(err.Error(), "item i") {
			t.Errorf("%s: %v, want an error naming item i", name, err)
		}
	}
}

func TestCheckStarted(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		at time.Time
		ok bool
	}{
		{now, true},
		{MinStartedAt, true},
		{now.Add(MaxClockSkew), true},
		{time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), false}, // wrapped to 2169 as Unix nanoseconds
		{time.Date(1999, 12, 31, 23, 0, 0, 0, time.UTC), false},
		{now.Add(MaxClockSkew + time.Second), false},
		{time.Time{}, false},
	} {
		h := header(TestFresh)
		h.StartedAt = tc.at
		if err := h.CheckStarted(now); (err == nil) != tc.ok {
			t.Errorf("started %v: %v", tc.at, err)
		}
	}
}

// TestMarshalKeepsHTML: '<' stays one byte, so a re-encoded run is never
// larger than the file read, and it reads back the same.
func TestMarshalKeepsHTML(t *testing.T) {
	t.Parallel()
	h := header(TestFresh)
	h.Dataset.Name = strings.Repeat("<&>", 1000)
	b, err := Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "<&>") || bytes.HasSuffix(b, []byte("\n")) {
		t.Fatalf("Marshal escaped HTML or kept a newline: %.80s", b)
	}
	var enc bytes.Buffer
	if err := Encode(&enc, &Run{Header: h, Docs: []Doc{{ID: "a<b", Bytes: 1, Tokens: 1, Bits: 1}}}); err != nil {
		t.Fatal(err)
	}
	if enc.Len() > len(b)+100 {
		t.Fatalf("Encode wrote %d bytes for a %d-byte header", enc.Len(), len(b))
	}
	r, err := Read(&enc, "x")
	if err != nil || r.Header.Dataset.Name != h.Dataset.Name || r.Docs[0].ID != "a<b" {
		t.Fatalf("read back: %v", err)
	}
}
