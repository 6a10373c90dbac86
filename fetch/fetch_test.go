package fetch

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ollama/ollama/convert/sentencepiece"

	"github.com/udgamlabs/udgam-ci/convert/converttest"
	"github.com/udgamlabs/udgam-ci/hub"
	"github.com/udgamlabs/udgam-ci/hub/hubtest"
	"github.com/udgamlabs/udgam-ci/runner"
)

const sha = "0123456789abcdef0123456789abcdef01234567"

func newClient(t *testing.T, fh *hubtest.Hub) *hub.Client {
	c := hub.New(func(k string) string {
		switch k {
		case "HF_ENDPOINT":
			return fh.URL
		case "UDGAM_CI_CACHE":
			return filepath.Join(t.TempDir(), "hub")
		}
		return ""
	})
	c.HTTP = &http.Client{}
	return c
}

func TestFetchConvertsSafetensorsAndCaches(t *testing.T) {
	t.Parallel()
	fh := hubtest.New(t)
	src := t.TempDir()
	if _, err := converttest.Small.Write(src); err != nil {
		t.Fatal(err)
	}
	if err := fh.AddDir("acme/tiny", sha, src); err != nil {
		t.Fatal(err)
	}
	client := newClient(t, fh)
	cache := t.TempDir()
	opts := Options{Repo: "acme/tiny", Revision: sha, Dtype: "f32", CacheDir: cache}

	m, err := Fetch(context.Background(), client, opts)
	if err != nil {
		t.Fatal(err)
	}
	if m.Model.Conversion == nil || m.Model.Conversion.Dtype != "f32" || m.Model.Conversion.Source != "acme/tiny@"+sha {
		t.Errorf("conversion %+v", m.Model.Conversion)
	}
	info, err := runner.ReadInfo(m.Path)
	if err != nil {
		t.Fatal(err)
	}
	if info.SHA256 != m.Model.SHA256 || info.Arch != "llama" || m.Model.Revision != sha || m.Model.Name != "acme/tiny" {
		t.Errorf("model %+v, file info sha %s arch %s", m.Model, info.SHA256, info.Arch)
	}

	total := len(fh.Requests())
	again, err := Fetch(context.Background(), client, opts)
	if err != nil {
		t.Fatal(err)
	}
	if again.Path != m.Path || again.Model.SHA256 != m.Model.SHA256 {
		t.Errorf("cached fetch gave %+v, first %+v", again, m)
	}
	if n := len(fh.Requests()); n != total {
		t.Errorf("cached fetch made %d requests", n-total)
	}

	// Another dtype is another cache entry.
	q8, err := Fetch(context.Background(), client, Options{Repo: "acme/tiny", Revision: sha, Dtype: "q8_0", CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if q8.Path == m.Path || q8.Model.SHA256 == m.Model.SHA256 {
		t.Errorf("q8_0 fetch reused the f32 file")
	}

	out := filepath.Join(t.TempDir(), "m.gguf")
	if err := CopyTo(m, out); err != nil {
		t.Fatal(err)
	}
	if info, err := runner.ReadInfo(out); err != nil || info.SHA256 != m.Model.SHA256 {
		t.Errorf("copied file: %v, sha %s", err, info.SHA256)
	}
}

// TestFetchSentencePiece: a repository with tokenizer.model (and no
// tokenizer.json) is fetched with it and converted from it.
func TestFetchSentencePiece(t *testing.T) {
	t.Parallel()
	fh := hubtest.New(t)
	src := t.TempDir()
	if _, err := converttest.Small.Write(src); err != nil {
		t.Fatal(err)
	}
	spm, err := converttest.SentencePieceModel(sentencepiece.TrainerSpec_BPE, "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(src, "tokenizer.json"))
	if err := os.WriteFile(filepath.Join(src, "tokenizer.model"), spm, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "tokenizer_config.json"), []byte(`{"bos_token": "<s>", "eos_token": "</s>"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fh.AddDir("acme/spm", sha, src); err != nil {
		t.Fatal(err)
	}
	m, err := Fetch(context.Background(), newClient(t, fh), Options{Repo: "acme/spm", Revision: sha, Dtype: "f32", CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	info, err := runner.ReadInfo(m.Path)
	if err != nil {
		t.Fatal(err)
	}
	if info.TokenizerModel != "llama" || info.BOS != 1 || info.VocabSize != converttest.Vocab {
		t.Errorf("tokenizer %s, BOS %d, %d tokens", info.TokenizerModel, info.BOS, info.VocabSize)
	}
	if fh.Count("GET /acme/spm/resolve/"+sha+"/tokenizer.model") == 0 {
		t.Errorf("tokenizer.model was not downloaded: %v", fh.Requests())
	}
}

func TestFetchPrefersMatchingGGUF(t *testing.T) {
	t.Parallel()
	fh := hubtest.New(t)
	fh.Add("acme/quant", sha, map[string][]byte{
		"model-f16.gguf":  []byte("GGUF f16 bytes"),
		"model-bf16.gguf": []byte("GGUF bf16 bytes"),
		"README.md":       []byte("hi"),
	})
	client := newClient(t, fh)
	tests := []struct {
		dtype, file, err string
	}{
		{"f16", "model-f16.gguf", ""},
		{"bf16", "model-bf16.gguf", ""},
		{"q8_0", "", "missing config.json, a tokenizer (tokenizer.json, tokenizer.model or vocab.json), weights"},
	}
	for _, tt := range tests {
		t.Run(tt.dtype, func(t *testing.T) {
			m, err := Fetch(context.Background(), client, Options{Repo: "acme/quant", Revision: sha, Dtype: tt.dtype, CacheDir: t.TempDir()})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Model.File != tt.file || m.Model.Conversion != nil {
				t.Errorf("model %+v, want file %s unconverted", m.Model, tt.file)
			}
			b, _ := os.ReadFile(m.Path)
			if !strings.Contains(string(b), tt.dtype+" bytes") {
				t.Errorf("fetched %q", b)
			}
		})
	}
}

func TestFetchRevisionPinning(t *testing.T) {
	t.Parallel()
	fh := hubtest.New(t)
	fh.Add("acme/quant", sha, map[string][]byte{"model-f32.gguf": []byte("GGUF")})
	client := newClient(t, fh)
	_, err := Fetch(context.Background(), client, Options{Repo: "acme/quant", Revision: "main", CacheDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "not a 40-hex commit sha") {
		t.Fatalf("unpinned revision: error %v", err)
	}
	m, err := Fetch(context.Background(), client, Options{Repo: "acme/quant", Revision: "main", AllowUnpinned: true, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if m.Model.Revision != sha {
		t.Errorf("revision %q, want the resolved %s", m.Model.Revision, sha)
	}
}

// publish adds the files of a checkpoint directory to the fake hub under
// prefix (a subfolder, or "").
func publish(t *testing.T, fh *hubtest.Hub, repo, dir, prefix string, extra map[string][]byte) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for k, v := range extra {
		files[k] = v
	}
	var lfs []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[prefix+e.Name()] = b
		if !strings.HasSuffix(e.Name(), ".json") {
			lfs = append(lfs, prefix+e.Name())
		}
	}
	fh.Add(repo, sha, files, lfs...)
}

func TestFetchRefusesUnsupportedArchitectureBeforeWeights(t *testing.T) {
	t.Parallel()
	fh := hubtest.New(t)
	src := t.TempDir()
	c := converttest.Small.Checkpoint()
	c.Config["architectures"] = []string{"BloomForCausalLM"}
	if err := c.Write(src, converttest.Safetensors); err != nil {
		t.Fatal(err)
	}
	publish(t, fh, "acme/bloom", src, "", nil)
	_, err := Fetch(context.Background(), newClient(t, fh), Options{Repo: "acme/bloom", Revision: sha, CacheDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "BloomForCausalLM is not supported") || !strings.Contains(err.Error(), "supported: ") || !strings.Contains(err.Error(), "LlamaForCausalLM") {
		t.Fatalf("error %v, want the architecture refused with the supported list", err)
	}
	for _, r := range fh.Requests() {
		if strings.Contains(r, "model.safetensors") {
			t.Errorf("weights were requested before the refusal: %s", r)
		}
	}
}

func TestFetchSubfolderWithTorchWeights(t *testing.T) {
	t.Parallel()
	fh := hubtest.New(t)
	src := t.TempDir()
	if err := converttest.Small.Checkpoint().Write(src, converttest.ShardedTorch); err != nil {
		t.Fatal(err)
	}
	publish(t, fh, "acme/ckpts", src, "step-100/", map[string][]byte{"README.md": []byte("checkpoints by step")})
	client := newClient(t, fh)
	opts := Options{Repo: "acme/ckpts", Revision: sha, CacheDir: t.TempDir(), Subfolder: "step-100"}
	m, err := Fetch(context.Background(), client, opts)
	if err != nil {
		t.Fatal(err)
	}
	if c := m.Model.Conversion; c == nil || c.From != "pytorch" || c.Source != "acme/ckpts@"+sha+" subfolder step-100" {
		t.Errorf("conversion %+v", m.Model.Conversion)
	}
	// Without the subfolder the top level has no checkpoint.
	opts.Subfolder = ""
	if _, err := Fetch(context.Background(), client, opts); err == nil || !strings.Contains(err.Error(), "top level: missing config.json") {
		t.Errorf("top level: %v", err)
	}
	opts.Subfolder = "../x"
	if _, err := Fetch(context.Background(), client, opts); err == nil || !strings.Contains(err.Error(), "not a relative path") {
		t.Errorf("bad subfolder: %v", err)
	}
}
