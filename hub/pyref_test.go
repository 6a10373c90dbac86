package hub

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/hub/hubtest"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// hubCase is one download both clients make: a whole snapshot, or one
// file when File is set.
type hubCase struct {
	Name     string `json:"name"`
	Repo     string `json:"repo"`
	Revision string `json:"revision"`
	File     string `json:"filename,omitempty"`
	Token    string `json:"token,omitempty"`
}

// hubOutcome is what a client made of a case: the commit and the sha256 of
// every file's bytes, or the HTTP status it failed with.
type hubOutcome struct {
	Name    string            `json:"name"`
	Commit  string            `json:"commit"`
	Files   map[string]string `json:"files"`
	Error   string            `json:"error"`
	Status  int               `json:"status"`
	Message string            `json:"message"`
}

// TestHuggingFaceHubReference holds hubtest's fake hub to huggingface_hub,
// the hub's own client (pinned in scripts/pyref), and udgam-ci's client to
// it: the same downloads (a snapshot at a pinned commit and at a branch,
// with LFS safetensors, a sharded index and a subfolder; one file) must
// give both the same bytes, and the same failures (a gated repository
// without its token, a missing repository, revision or file) must fail
// both with the same status. Run by make crosscheck-hub (UDGAM_PYREF_PYTHON).
func TestHuggingFaceHubReference(t *testing.T) {
	t.Parallel()
	py := os.Getenv("UDGAM_PYREF_PYTHON")
	if py == "" {
		t.Skip("UDGAM_PYREF_PYTHON is not set: make crosscheck-hub runs this against huggingface_hub")
	}
	h := hubtest.New(t)
	h.PageSize = 3
	const old = "1111111111111111111111111111111111111111"
	const cur = "2222222222222222222222222222222222222222"
	shard := func(n int) []byte { return bytes.Repeat([]byte{byte(n), 0x3c, 0x00, 0x7f}, 4096+n) }
	index := []byte(`{"metadata":{"total_size":32776},"weight_map":{"a.weight":"model-00001-of-00002.safetensors","b.weight":"model-00002-of-00002.safetensors"}}`)
	files := map[string][]byte{
		"config.json":                            []byte(`{"model_type":"llama"}`),
		"tokenizer.json":                         []byte(`{"version":"1.0"}`),
		"model.safetensors.index.json":           index,
		"model-00001-of-00002.safetensors":       shard(1),
		"model-00002-of-00002.safetensors":       shard(2),
		"onnx/model.onnx":                        []byte("onnx bytes"),
		"onnx/deep/weights/extra.safetensors":    shard(3),
		"README.md":                              []byte("# tiny\n"),
		"space in name/file with spaces.txt":     []byte("spaced"),
		"original/params with ünïcode name.json": []byte(`{"dim":8}`),
	}
	h.Add("acme/tiny", old, map[string][]byte{"config.json": []byte(`{"old":true}`)})
	h.Add("acme/tiny", cur, files, "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "onnx/deep/weights/extra.safetensors")
	h.Add("acme/gated", cur, map[string][]byte{"config.json": []byte(`{}`), "model.safetensors": shard(4)}, "model.safetensors").Gate("hf_gatekeeper")

	cases := []hubCase{
		{Name: "snapshot at a commit", Repo: "acme/tiny", Revision: cur},
		{Name: "snapshot at an older commit", Repo: "acme/tiny", Revision: old},
		{Name: "snapshot at a branch", Repo: "acme/tiny", Revision: "main"},
		{Name: "one LFS file", Repo: "acme/tiny", Revision: cur, File: "model-00002-of-00002.safetensors"},
		{Name: "one file in a subfolder", Repo: "acme/tiny", Revision: cur, File: "onnx/model.onnx"},
		{Name: "gated with its token", Repo: "acme/gated", Revision: cur, Token: "hf_gatekeeper"},
		{Name: "gated without a token", Repo: "acme/gated", Revision: cur},
		{Name: "gated file without a token", Repo: "acme/gated", Revision: cur, File: "model.safetensors"},
		{Name: "missing repository", Repo: "acme/nothing", Revision: cur},
		{Name: "missing branch", Repo: "acme/tiny", Revision: "no-such-branch"},
		{Name: "missing commit", Repo: "acme/tiny", Revision: "3333333333333333333333333333333333333333"},
		{Name: "missing file", Repo: "acme/tiny", Revision: cur, File: "model-00003-of-00002.safetensors"},
	}
	want := map[string]hubOutcome{
		"snapshot at a commit":        {Commit: cur, Files: digests(files)},
		"snapshot at an older commit": {Commit: old, Files: digests(map[string][]byte{"config.json": []byte(`{"old":true}`)})},
		"snapshot at a branch":        {Commit: cur, Files: digests(files)},
		"one LFS file":                {Commit: cur, Files: digests(map[string][]byte{"model-00002-of-00002.safetensors": shard(2)})},
		"one file in a subfolder":     {Commit: cur, Files: digests(map[string][]byte{"onnx/model.onnx": []byte("onnx bytes")})},
		"gated with its token":        {Commit: cur, Files: digests(map[string][]byte{"config.json": []byte(`{}`), "model.safetensors": shard(4)})},
		"gated without a token":       {Status: 401},
		"gated file without a token":  {Status: 401},
		"missing repository":          {Status: 401},
		"missing branch":              {Status: 404},
		"missing commit":              {Status: 404},
		"missing file":                {Status: 404},
	}

	ref := runHuggingFaceHub(t, py, h.URL, cases)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			w := want[c.Name]
			py, ok := ref[c.Name]
			if !ok {
				t.Fatal("huggingface_hub gave no outcome")
			}
			ours := goDownload(t, h.URL, c)
			for _, got := range []struct {
				who string
				o   hubOutcome
			}{{"huggingface_hub", py}, {"udgam-ci's hub client", ours}} {
				if w.Status != 0 {
					if got.o.Status != w.Status {
						t.Errorf("%s: got status %d (%s %s), files %v; want a %d failure", got.who, got.o.Status, got.o.Error, got.o.Message, keys(got.o.Files), w.Status)
					}
					continue
				}
				if got.o.Error != "" || got.o.Commit != w.Commit || !maps.Equal(got.o.Files, w.Files) {
					t.Errorf("%s: got commit %s, files %v, error %s %s; want commit %s, files %v", got.who, got.o.Commit, keys(got.o.Files), got.o.Error, got.o.Message, w.Commit, keys(w.Files))
				}
			}
		})
	}
}

// goDownload makes c's download with udgam-ci's client, as fetch does: the
// revision resolved to a commit, the listing, each file.
func goDownload(t *testing.T, endpoint string, c hubCase) hubOutcome {
	t.Helper()
	client := New(func(k string) string {
		return map[string]string{"HF_ENDPOINT": endpoint, "HF_TOKEN": c.Token, "UDGAM_CI_CACHE": t.TempDir()}[k]
	})
	client.Retries = 0
	ctx := context.Background()
	out := hubOutcome{Files: map[string]string{}}
	fail := func(err error) hubOutcome {
		var serr *StatusError
		if errors.Is(err, ErrNotFound) && !errors.As(err, &serr) {
			// A file the listing lacks: the client fails before asking for it.
			return hubOutcome{Error: "ErrNotFound", Status: 404, Message: err.Error()}
		}
		if !errors.As(err, &serr) {
			return hubOutcome{Error: "no HTTP status", Message: err.Error()}
		}
		return hubOutcome{Error: "StatusError", Status: serr.Status, Message: err.Error()}
	}
	sha := c.Revision
	if !runfile.IsCommit(sha) {
		var err error
		if sha, err = client.ResolveRevision(ctx, Model, c.Repo, c.Revision); err != nil {
			return fail(err)
		}
	}
	out.Commit = sha
	if c.File != "" {
		p, err := client.Fetch(ctx, Model, c.Repo, sha, c.File)
		if err != nil {
			return fail(err)
		}
		out.Files[c.File] = fileDigest(t, p)
		return out
	}
	files, err := client.ListFiles(ctx, Model, c.Repo, sha)
	if err != nil {
		return fail(err)
	}
	for _, f := range files {
		p, err := client.Download(ctx, Model, c.Repo, sha, f)
		if err != nil {
			return fail(err)
		}
		out.Files[f.Path] = fileDigest(t, p)
	}
	return out
}

// runHuggingFaceHub runs scripts/pyref/hub_download.py on the cases.
func runHuggingFaceHub(t *testing.T, py, endpoint string, cases []hubCase) map[string]hubOutcome {
	t.Helper()
	_, src, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(src), "..", "scripts", "pyref", "hub_download.py")
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, script)
	cmd.Stdin = bytes.NewReader(in)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HF_ENDPOINT="+endpoint, "HF_HOME="+home, "HF_HUB_DISABLE_TELEMETRY=1",
		"HF_HUB_DISABLE_IMPLICIT_TOKEN=1", "HF_HUB_ETAG_TIMEOUT=30", "HF_HUB_DOWNLOAD_TIMEOUT=30", "HF_TOKEN=", "NO_PROXY=127.0.0.1,localhost")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", py, script, err, stderr.String())
	}
	got := map[string]hubOutcome{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var o hubOutcome
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			t.Fatalf("huggingface_hub's outcome %q: %v\n%s", line, err, stderr.String())
		}
		got[o.Name] = o
	}
	return got
}

func digests(files map[string][]byte) map[string]string {
	out := map[string]string{}
	for p, b := range files {
		s := sha256.Sum256(b)
		out[p] = hex.EncodeToString(s[:])
	}
	return out
}

func fileDigest(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func keys(m map[string]string) string { return fmt.Sprint(slices.Sorted(maps.Keys(m))) }
