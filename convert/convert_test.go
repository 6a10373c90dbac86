package convert

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/fs/ggml"
	"github.com/udgamlabs/udgam-ci/convert/converttest"
	"github.com/udgamlabs/udgam-ci/reference/testmodel"
	"github.com/x448/float16"
)

// readGGUF reads a converted file back, failing the test if it cannot.
func readGGUF(t *testing.T, path string) *testmodel.GGUF {
	t.Helper()
	g, err := testmodel.ReadGGUF(path)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// values is a tensor's elements as float32, failing the test if it cannot.
func values(t *testing.T, g *testmodel.GGUF, name string) []float32 {
	t.Helper()
	v, err := g.Float32s(name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestConvertDtypes(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	want, err := converttest.Small.Write(src)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dtype    string
		weight   ggml.TensorType
		fileType uint32
	}{
		{"f32", ggml.TensorTypeF32, 0},
		{"f16", ggml.TensorTypeF16, 1},
		{"bf16", ggml.TensorTypeBF16, 32},
		{"q8_0", ggml.TensorTypeQ8_0, 7},
	}
	for _, tt := range tests {
		t.Run(tt.dtype, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "m.gguf")
			res, err := Dir(src, out, Options{Dtype: tt.dtype, Source: "test/tiny@abc"})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(out)
			sum := sha256.Sum256(b)
			if res.SHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("sha256 %s, file hashes to %x", res.SHA256, sum)
			}
			if res.Conversion.Dtype != tt.dtype || res.Conversion.From != "safetensors" || res.Conversion.Source != "test/tiny@abc" {
				t.Errorf("conversion %+v", res.Conversion)
			}
			if !strings.Contains(res.Conversion.Tool, "ollama v0.17.4") {
				t.Errorf("tool %q does not name the ollama version", res.Conversion.Tool)
			}
			if rec, err := ReadConversion(out); err != nil || rec == nil || *rec != res.Conversion {
				t.Errorf("conversion record in the GGUF: %+v, %v; want %+v", rec, err, res.Conversion)
			}
			g := readGGUF(t, out)
			if got := g.KV.Architecture(); got != "llama" {
				t.Errorf("architecture %q", got)
			}
			if got := g.KV.Uint("general.file_type"); got != tt.fileType {
				t.Errorf("file type %d, want %d", got, tt.fileType)
			}
			if got := g.KV.String("tokenizer.ggml.pre"); got != "smollm" {
				t.Errorf("pre-tokenizer %q, want smollm (digits split one by one)", got)
			}
			if got := len(g.KV.Strings("tokenizer.ggml.tokens")); got != converttest.Vocab {
				t.Errorf("%d tokens, want %d", got, converttest.Vocab)
			}
			if got := g.KV.Uint("tokenizer.ggml.bos_token_id"); got != uint32(converttest.Vocab-1) {
				t.Errorf("bos %d", got)
			}
			if len(g.Tensors) != len(want) {
				t.Errorf("%d tensors, want %d", len(g.Tensors), len(want))
			}
			// Norms stay F32 whatever the dtype; weights take it.
			if k := g.Tensors["output_norm.weight"].Kind; k != uint32(ggml.TensorTypeF32) {
				t.Errorf("output_norm kind %d", k)
			}
			emb := g.Tensors["token_embd.weight"]
			if emb.Kind != uint32(tt.weight) {
				t.Errorf("token_embd kind %d, want %d", emb.Kind, tt.weight)
			}
			if !slices.Equal(emb.Shape, []uint64{64, uint64(converttest.Vocab)}) {
				t.Errorf("token_embd shape %v (GGUF order)", emb.Shape)
			}

			for gname, hname := range map[string]string{
				"token_embd.weight":     "model.embed_tokens.weight",
				"blk.1.ffn_down.weight": "model.layers.1.mlp.down_proj.weight",
				"output_norm.weight":    "model.norm.weight",
			} {
				got, src := values(t, g, gname), want[hname].Values
				checkClose(t, gname, tt.dtype, got, src)
			}
			// q and k are permuted for llama.cpp's rope: same values, new order.
			q, src := values(t, g, "blk.0.attn_q.weight"), want["model.layers.0.self_attn.q_proj.weight"].Values
			if tt.dtype == "f32" || tt.dtype == "bf16" {
				a, b := slices.Clone(q), slices.Clone(src)
				slices.Sort(a)
				slices.Sort(b)
				if !slices.Equal(a, b) {
					t.Errorf("attn_q holds other values than q_proj")
				}
				if slices.Equal(q, src) {
					t.Errorf("attn_q was not permuted")
				}
			}
		})
	}
}

// checkClose requires exact values for f32 and bf16 (the source is bf16)
// and each type's rounding error otherwise.
func checkClose(t *testing.T, name, dtype string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", name, len(got), len(want))
	}
	for i := range got {
		tol := 0.0
		switch dtype {
		case "f16":
			tol = max(math.Abs(float64(want[i]))*1e-3, 6e-8) // f16 subnormals step by 6e-8
		case "q8_0":
			tol = 0.01 // half a step of max|x|/127 with |x| < 1.2
		}
		if name == "output_norm.weight" {
			tol = 0 // always F32
		}
		if d := math.Abs(float64(got[i] - want[i])); d > tol {
			t.Fatalf("%s[%d] = %v, want %v (dtype %s)", name, i, got[i], want[i], dtype)
		}
	}
}

func TestConvertF32SourceKeepsPrecision(t *testing.T) {
	t.Parallel()
	m := converttest.Small
	m.Dtype = "F32"
	src := t.TempDir()
	want, err := m.Write(src)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "m.gguf")
	if _, err := Dir(src, out, Options{Dtype: "f32"}); err != nil {
		t.Fatal(err)
	}
	g := readGGUF(t, out)
	// ollama's own ConvertModel would have rounded this to F16.
	if !slices.Equal(values(t, g, "token_embd.weight"), want["model.embed_tokens.weight"].Values) {
		t.Error("f32 output of an f32 checkpoint is not exact")
	}
}

func TestQuantizeQ8MatchesGGMLReference(t *testing.T) {
	t.Parallel()
	block := make([]float32, 32)
	for i := range block {
		block[i] = float32(i-16) / 10 // max |x| = 1.6
	}
	out := quantizeQ8(block)
	if len(out) != 34 {
		t.Fatalf("block of %d bytes, want 34", len(out))
	}
	d := float16.Frombits(binary.LittleEndian.Uint16(out)).Float32()
	if want := float16.Fromfloat32(1.6 / 127).Float32(); d != want {
		t.Errorf("scale %v, want %v", d, want)
	}
	if q := int8(out[2]); q != -127 {
		t.Errorf("q[0] = %d, want -127 (the largest magnitude)", q)
	}
	if q := int8(out[2+16]); q != 0 {
		t.Errorf("q[16] = %d, want 0", q)
	}
	if got := quantizeQ8(make([]float32, 32)); got[0] != 0 || got[1] != 0 || got[2] != 0 {
		t.Errorf("zero block encodes as %v", got[:3])
	}
}

func TestConvertErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(dir string) error
		opts  Options
		want  string
	}{
		{"no config", func(dir string) error { return nil }, Options{}, "no config.json"},
		{"bad dtype", func(dir string) error { _, err := converttest.Small.Write(dir); return err }, Options{Dtype: "q4_k"}, `dtype "q4_k"`},
		{"no weights", func(dir string) error {
			if _, err := converttest.Small.Write(dir); err != nil {
				return err
			}
			return os.Remove(filepath.Join(dir, "model.safetensors"))
		}, Options{}, "checkpoint has no weights"},
		{"truncated weights", func(dir string) error {
			if _, err := converttest.Small.Write(dir); err != nil {
				return err
			}
			p := filepath.Join(dir, "model.safetensors")
			b, _ := os.ReadFile(p)
			return os.WriteFile(p, b[:len(b)-100], 0o644)
		}, Options{}, "do not hold"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := tt.setup(dir); err != nil {
				t.Fatal(err)
			}
			checkRefused(t, dir, tt.opts, tt.want)
		})
	}
}

// checkRefused converts dir, which must fail with an error containing
// want and leave nothing behind.
func checkRefused(t *testing.T, dir string, opts Options, want string) {
	t.Helper()
	outDir := t.TempDir()
	_, err := Dir(dir, filepath.Join(outDir, "m.gguf"), opts)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
	if left, _ := os.ReadDir(outDir); len(left) != 0 {
		t.Errorf("a failed conversion left %v", left)
	}
}

func TestReadConversionOfOtherFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plain := filepath.Join(dir, "bigram.gguf")
	if err := testmodel.WriteBigramGGUF(plain, testmodel.RandomBigram(1)); err != nil {
		t.Fatal(err)
	}
	if rec, err := ReadConversion(plain); rec != nil || err != nil {
		t.Errorf("a GGUF made elsewhere: %+v, %v", rec, err)
	}
	junk := filepath.Join(dir, "junk.gguf")
	os.WriteFile(junk, []byte("GGUF\x03\x00\x00\x00\xff\xff"), 0o644)
	if _, err := ReadConversion(junk); err == nil || !strings.Contains(err.Error(), junk) {
		t.Errorf("truncated file: %v", err)
	}
}
