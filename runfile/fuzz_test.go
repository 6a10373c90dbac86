package runfile

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// FuzzRead: any bytes either fail to read, or read as a run whose records
// all pass Validate, whose sums are finite, and which Encode writes back
// in lines that read again to the same run (what the report server
// stores and serves). Crashers found are kept under testdata/fuzz/FuzzRead.
func FuzzRead(f *testing.F) {
	h := `{"schema":"udgam-ci.run/v1","id":"r","test":"fresh","model":{"name":"m"},"dataset":{"name":"<d>","sha256":"x","count":1},"settings":{"add_bos":true,"bos_mode":"auto","bos_id":1,"dtype":"F32","tokenizer_sha256":"t","engine":"e"},"runtime":{},"git":{"pr":null},"started_at":"2026-11-30T00:00:00Z"}`
	hp := strings.Replace(h, `"test":"fresh"`, `"test":"probes"`, 1)
	for _, s := range []string{
		h + "\n" + `{"id":"a","source":"s","bytes":10,"tokens":3,"bits":7.5,"windows":1}`,
		h + "\n" + `{"id":"big","bytes":1,"tokens":1,"bits":1e308}` + "\n" + `{"id":"z","bytes":1,"tokens":1,"bits":0}`,
		h + "\n" + `{"id":"o","bytes":4611686018427387904,"tokens":1,"bits":1}`,
		h + "\n" + `{"id":"u","bytes":0,"tokens":0,"bits":0,"first_unscored":true,"text_bytes":3}`,
		hp + "\n" + `{"id":"p","type":"add","level":1,"logprobs":[-1,-9],"pred":0,"answer":0,"correct":true,"norm":[-0.5,-3]}`,
		hp + "\n" + `{"id":"t","type":"add","level":1,"logprobs":[-1,-1],"pred":0,"answer":1,"correct":false,"tie":true}`,
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Read(bytes.NewReader(b), "fuzz")
		if err != nil {
			return
		}
		for i := range r.Docs {
			if err := r.Docs[i].Validate(); err != nil {
				t.Fatalf("read a document Validate refuses: %v", err)
			}
		}
		for i := range r.Items {
			if err := r.Items[i].Validate(); err != nil {
				t.Fatalf("read an item Validate refuses: %v", err)
			}
		}
		fs := SummarizeFresh(r.Docs)
		for _, v := range []float64{fs.Bits, fs.BPB, float64(fs.Bytes)} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				t.Fatalf("summary of a read run: %+v", fs.FreshGroup)
			}
		}
		var enc bytes.Buffer
		if err := Encode(&enc, r); err != nil {
			t.Fatalf("encode a read run: %v", err)
		}
		first := bytes.Clone(enc.Bytes())
		for _, line := range bytes.Split(enc.Bytes(), []byte{'\n'}) {
			if len(line) >= MaxLine {
				t.Fatalf("a re-encoded line of %d bytes is over the reader's limit", len(line))
			}
		}
		again, err := Read(&enc, "re-encoded")
		if err != nil {
			t.Fatalf("a re-encoded run does not read: %v", err)
		}
		// The encoding is canonical: encoding what it reads gives it back
		// byte for byte (an empty list and a missing one are the same).
		var enc2 bytes.Buffer
		if err := Encode(&enc2, again); err != nil || !bytes.Equal(enc2.Bytes(), first) {
			t.Fatalf("re-encoding is not stable (%v):\n%s\n%s", err, first, enc2.Bytes())
		}
	})
}
