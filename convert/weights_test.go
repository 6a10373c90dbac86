package convert

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/fs/ggml"
	"github.com/udgamlabs/udgam-ci/convert/converttest"
	"github.com/udgamlabs/udgam-ci/ggufspec"
)

// Every weight format and source dtype converts to the same GGUF tensors,
// holding exactly the checkpoint's values.
func TestWeightFormats(t *testing.T) {
	t.Parallel()
	for _, dtype := range []string{"F32", "F16", "BF16"} {
		m := converttest.Small
		m.Dtype = dtype
		c := m.Checkpoint()
		for _, format := range converttest.Formats {
			t.Run(dtype+"/"+string(format), func(t *testing.T) {
				dir := t.TempDir()
				if err := c.Write(dir, format); err != nil {
					t.Fatal(err)
				}
				out := filepath.Join(t.TempDir(), "m.gguf")
				res, err := Dir(dir, out, Options{Dtype: "f32"})
				if err != nil {
					t.Fatal(err)
				}
				wantFrom := FormatSafetensors
				if strings.Contains(string(format), "pytorch") {
					wantFrom = FormatTorch
				}
				if res.Conversion.From != wantFrom {
					t.Errorf("conversion from %q, want %q", res.Conversion.From, wantFrom)
				}
				g := readGGUF(t, out)
				if len(g.Tensors) != len(c.Tensors) {
					t.Errorf("%d tensors, want %d", len(g.Tensors), len(c.Tensors))
				}
				for gname, hname := range map[string]string{
					"token_embd.weight":      "model.embed_tokens.weight",
					"output.weight":          "lm_head.weight",
					"blk.1.ffn_down.weight":  "model.layers.1.mlp.down_proj.weight",
					"blk.0.attn_v.weight":    "model.layers.0.self_attn.v_proj.weight",
					"blk.1.attn_norm.weight": "model.layers.1.input_layernorm.weight",
				} {
					if !slices.Equal(values(t, g, gname), c.Tensors[hname].Values) {
						t.Errorf("%s differs from %s", gname, hname)
					}
				}
			})
		}
	}
}

// The q/k permutation turns Hugging Face's rotary pairs (i, i+d/2) into
// llama.cpp's (2i, 2i+1): row 2i of a head is HF row i, row 2i+1 is HF row
// i+d/2.
func TestLlamaPermutation(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	want, err := converttest.Small.Write(src)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "m.gguf")
	if _, err := Dir(src, out, Options{}); err != nil {
		t.Fatal(err)
	}
	g := readGGUF(t, out)
	const hidden, hd = 64, 16
	for _, tc := range []struct {
		gguf, hf string
		heads    int
	}{{"blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj.weight", 4}, {"blk.1.attn_k.weight", "model.layers.1.self_attn.k_proj.weight", 2}} {
		got, hf := values(t, g, tc.gguf), want[tc.hf].Values
		row := func(v []float32, r int) []float32 { return v[r*hidden : (r+1)*hidden] }
		for h := range tc.heads {
			for i := range hd / 2 {
				if !slices.Equal(row(got, h*hd+2*i), row(hf, h*hd+i)) || !slices.Equal(row(got, h*hd+2*i+1), row(hf, h*hd+hd/2+i)) {
					t.Fatalf("%s head %d pair %d is not HF rows %d and %d", tc.gguf, h, i, h*hd+i, h*hd+hd/2+i)
				}
			}
		}
	}
}

func TestWeightErrors(t *testing.T) {
	t.Parallel()
	c := converttest.Small.Checkpoint()
	tests := []struct {
		name   string
		format converttest.Format
		change func(t *testing.T, dir string)
		want   string
	}{
		{"extra tensor is not dropped silently", converttest.Safetensors, func(t *testing.T, dir string) {
			extra := c
			extra.Tensors = map[string]converttest.Tensor{"model.layers.0.mlp.extra.weight": {Shape: []uint64{2}, Values: []float32{1, 2}}}
			if err := converttest.WriteSafetensors(filepath.Join(dir, "extra.safetensors"), "BF16", extra.Tensors); err != nil {
				t.Fatal(err)
			}
		}, "did not use 1 checkpoint tensor(s): model.layers.0.mlp.extra.weight"},
		{"missing tensor", converttest.Safetensors, func(t *testing.T, dir string) {
			cut := c
			cut.Tensors = maps.Clone(c.Tensors)
			delete(cut.Tensors, "model.layers.1.mlp.up_proj.weight")
			if err := cut.WriteWeights(dir, converttest.Safetensors); err != nil {
				t.Fatal(err)
			}
		}, "no tensor model.layers.1.mlp.up_proj.weight"},
		{"wrong shape", converttest.Safetensors, func(t *testing.T, dir string) {
			cut := c
			cut.Tensors = maps.Clone(c.Tensors)
			cut.Tensors["model.norm.weight"] = converttest.Tensor{Shape: []uint64{3}, Values: []float32{1, 1, 1}}
			if err := cut.WriteWeights(dir, converttest.Safetensors); err != nil {
				t.Fatal(err)
			}
		}, "model.norm.weight has shape [3]; the config implies [64]"},
		{"missing shard", converttest.ShardedSafetensors, func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "model-00002-of-00002.safetensors"))
		}, "lists shard model-00002-of-00002.safetensors, which the checkpoint does not have"},
		{"index points elsewhere", converttest.ShardedTorch, func(t *testing.T, dir string) {
			editIndex(t, filepath.Join(dir, "pytorch_model.bin.index.json"), func(m map[string]string) {
				m["model.norm.weight"] = "pytorch_model-00001-of-00002.bin"
			})
		}, "model.norm.weight is in pytorch_model-00002-of-00002.bin, the index says pytorch_model-00001-of-00002.bin"},
		{"index lacks a tensor", converttest.ShardedSafetensors, func(t *testing.T, dir string) {
			editIndex(t, filepath.Join(dir, "model.safetensors.index.json"), func(m map[string]string) {
				delete(m, "lm_head.weight")
			})
		}, "lm_head.weight is in model-00001-of-00002.safetensors but not in the index"},
		{"pickle with a foreign global", converttest.Torch, func(t *testing.T, dir string) {
			rewritePickle(t, filepath.Join(dir, "pytorch_model.bin"), "collections\nOrderedDict\n", "os\nsystem\n")
		}, "names os.system, which a state dict does not hold"},
		{"not a zip", converttest.Torch, func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "pytorch_model.bin"), []byte("\x80\x02legacy"), 0o644)
		}, "not a zip archive"},
		{"truncated torch storage", converttest.Torch, func(t *testing.T, dir string) {
			small := c
			small.Tensors = maps.Clone(c.Tensors)
			tt := small.Tensors["model.norm.weight"]
			tt.Shape = []uint64{80} // more values than the storage holds
			small.Tensors["model.norm.weight"] = tt
			if err := small.WriteWeights(dir, converttest.Torch); err != nil {
				t.Fatal(err)
			}
		}, "tensor of 80 values at offset 0 in a storage of 64"},
		{"no weights", converttest.Safetensors, func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "model.safetensors"))
		}, "checkpoint has no weights"},
		{"unsupported architecture", converttest.Safetensors, func(t *testing.T, dir string) {
			editConfig(t, dir, func(m map[string]any) { m["architectures"] = []string{"BloomForCausalLM"} })
		}, "architecture BloomForCausalLM is not supported by the converter; supported: " + strings.Join(SupportedClasses(), ", ")},
		{"rope scaling", converttest.Safetensors, func(t *testing.T, dir string) {
			editConfig(t, dir, func(m map[string]any) { m["rope_scaling"] = map[string]any{"type": "linear", "factor": 2} })
		}, `rope_scaling = {"factor":2,"type":"linear"} is not supported`},
		{"rope parameters of another type", converttest.Safetensors, func(t *testing.T, dir string) {
			editConfig(t, dir, func(m map[string]any) {
				m["rope_parameters"] = map[string]any{"rope_type": "llama3", "rope_theta": 500000, "factor": 8}
			})
		}, `rope_parameters.factor = 8 is not supported`},
		{"tied but different head", converttest.Safetensors, func(t *testing.T, dir string) {
			editConfig(t, dir, func(m map[string]any) { m["tie_word_embeddings"] = true })
		}, "tie_word_embeddings is true but lm_head.weight differs from model.embed_tokens.weight"},
		{"untied without a head", converttest.Safetensors, func(t *testing.T, dir string) {
			cut := c
			cut.Tensors = maps.Clone(c.Tensors)
			delete(cut.Tensors, "lm_head.weight")
			if err := cut.WriteWeights(dir, converttest.Safetensors); err != nil {
				t.Fatal(err)
			}
		}, "no tensor lm_head.weight (and tie_word_embeddings is false)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := c.Write(dir, tt.format); err != nil {
				t.Fatal(err)
			}
			tt.change(t, dir)
			checkRefused(t, dir, Options{}, tt.want)
		})
	}
}

func TestSubfolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := converttest.Small.Write(filepath.Join(dir, "ckpt", "final")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "m.gguf")
	if _, err := Dir(dir, out, Options{Subfolder: "ckpt/final"}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"../x", "/abs", "."} {
		if _, err := Dir(dir, out, Options{Subfolder: bad}); err == nil {
			t.Errorf("subfolder %q accepted", bad)
		}
	}
}

func editIndex(t *testing.T, path string, edit func(map[string]string)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	edit(idx.WeightMap)
	b, _ = json.Marshal(idx)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func editConfig(t *testing.T, dir string, edit func(map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, _ = json.Marshal(m)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// rewritePickle replaces text in a torch zip's data.pkl.
func rewritePickle(t *testing.T, path, old, new string) {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range zr.File {
		r, _ := f.Open()
		var b bytes.Buffer
		b.ReadFrom(r)
		r.Close()
		data := b.Bytes()
		if strings.HasSuffix(f.Name, "data.pkl") {
			data = bytes.Replace(data, []byte(old), []byte(new), 1)
		}
		w, _ := zw.CreateHeader(&zip.FileHeader{Name: f.Name, Method: zip.Store})
		w.Write(data)
	}
	zr.Close()
	zw.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// transformers 5 writes rope_theta inside rope_parameters; the converter
// must read it there, not fall back to the default 10,000.
func TestRopeParameters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := converttest.Small.Checkpoint()
	delete(c.Config, "rope_theta")
	c.Config["rope_parameters"] = map[string]any{"rope_type": "default", "rope_theta": 100000.0}
	if err := c.Write(dir, converttest.Safetensors); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "m.gguf")
	if _, err := Dir(dir, out, Options{}); err != nil {
		t.Fatal(err)
	}
	if got := readGGUF(t, out).KV.Float("rope.freq_base"); got != 100000 {
		t.Errorf("rope.freq_base %v, want 100000 from rope_parameters", got)
	}
}

// Buffers PyTorch saves with the weights (rotary inv_freq) may be left out;
// nothing else may.
func TestIgnoredBuffers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := converttest.Small.Checkpoint()
	c.Tensors = maps.Clone(c.Tensors)
	c.Tensors["model.layers.0.self_attn.rotary_emb.inv_freq"] = converttest.Tensor{Shape: []uint64{8}, Values: make([]float32, 8)}
	if err := c.Write(dir, converttest.Torch); err != nil {
		t.Fatal(err)
	}
	if _, err := Dir(dir, filepath.Join(t.TempDir(), "m.gguf"), Options{}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		"model.layers.3.self_attn.rotary_emb.inv_freq": true, "h.0.attn.bias": true, "transformer.h.11.attn.masked_bias": true,
		"h.0.attn.c_attn.bias": false, "model.layers.0.self_attn.q_proj.bias": false, "inv_freq": false,
	} {
		if Ignored(name) != want {
			t.Errorf("Ignored(%s) = %v", name, !want)
		}
	}
}

func TestOutputType(t *testing.T) {
	t.Parallel()
	tests := []struct {
		t    Tensor
		want ggml.TensorType
		as   ggml.TensorType
	}{
		{Tensor{Name: "blk.0.attn_q.weight", Shape: []uint64{64, 64}}, ggml.TensorTypeBF16, ggml.TensorTypeBF16},
		{Tensor{Name: "blk.0.attn_norm.weight", Shape: []uint64{64}}, ggml.TensorTypeF32, ggml.TensorTypeF16},
		{Tensor{Name: "blk.0.attn_q.bias", Shape: []uint64{1, 64}}, ggml.TensorTypeF32, ggml.TensorTypeF16},
		{Tensor{Name: "blk.0.ssm_conv1d.weight", Shape: []uint64{64, 4}, F32: true}, ggml.TensorTypeF32, ggml.TensorTypeBF16},
		{Tensor{Name: "blk.0.ffn_down.weight", Shape: []uint64{64, 96}}, ggml.TensorTypeQ8_0, ggml.TensorTypeQ8_0},
		{Tensor{Name: "blk.0.ffn_down.weight", Shape: []uint64{64, 40}}, ggml.TensorTypeF16, ggml.TensorTypeQ8_0},
	}
	for _, tt := range tests {
		if got := OutputType(tt.t, tt.as); got != tt.want {
			t.Errorf("%s %v as %v: %v, want %v", tt.t.Name, tt.t.Shape, tt.as, got, tt.want)
		}
	}
}

// model info's family (ggufspec.Layout, read from a GGUF) must agree with
// what each converter says it writes.
func TestKindMatchesLayoutFamily(t *testing.T) {
	t.Parallel()
	for _, a := range architectures {
		kv := ggml.KV{"general.architecture": a.GGUF, a.GGUF + ".block_count": uint32(2)}
		if got := ggufspec.LayoutFromKV(kv).Family; got != a.Kind {
			t.Errorf("%s (%s): converter says %s, model info says %s", a.Classes[0], a.GGUF, a.Kind, got)
		}
	}
}
