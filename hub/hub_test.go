package hub

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/hub/hubtest"
)

const (
	shaA = "0123456789abcdef0123456789abcdef01234567"
	shaB = "89abcdef0123456789abcdef0123456789abcdef"
)

func TestNewFromEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                   string
		env                    map[string]string
		endpoint, token, cache string
	}{
		{"defaults", map[string]string{"HOME": "/h"}, DefaultEndpoint, "", "/h/.cache/udgam-ci/hub"},
		{"endpoint and token", map[string]string{"HF_ENDPOINT": "http://mirror:8080/", "HF_TOKEN": "t1", "XDG_CACHE_HOME": "/x"}, "http://mirror:8080", "t1", "/x/udgam-ci/hub"},
		{"legacy token name", map[string]string{"HUGGING_FACE_HUB_TOKEN": "t2", "UDGAM_CI_CACHE": "/c", "HOME": "/h"}, DefaultEndpoint, "t2", "/c"},
		{"HF_TOKEN wins", map[string]string{"HF_TOKEN": "a", "HUGGING_FACE_HUB_TOKEN": "b"}, DefaultEndpoint, "a", ".cache/udgam-ci/hub"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(func(k string) string { return tt.env[k] })
			if c.Endpoint != tt.endpoint || c.Token != tt.token || c.CacheDir != tt.cache {
				t.Errorf("got endpoint %q token %q cache %q, want %q %q %q", c.Endpoint, c.Token, c.CacheDir, tt.endpoint, tt.token, tt.cache)
			}
		})
	}
}

func TestResolveRevision(t *testing.T) {
	t.Parallel()
	h := hubtest.New(t)
	h.Add("acme/tiny", shaA, map[string][]byte{"a.txt": []byte("a")}).Branch("v1.0", shaB)
	c, _ := newClient(t, h, nil)
	ctx := context.Background()
	for rev, want := range map[string]string{"main": shaA, "v1.0": shaB, "": shaA} {
		got, err := c.ResolveRevision(ctx, Model, "acme/tiny", rev)
		if err != nil || got != want {
			t.Errorf("rev %q: got %q, %v; want %q", rev, got, err, want)
		}
	}
	if h.Count("GET /api/models/acme/tiny/revision/") != 3 {
		t.Errorf("requests: %v", h.Requests())
	}
	_, err := c.ResolveRevision(ctx, Model, "acme/tiny", "nope")
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown branch: got %v, want ErrNotFound", err)
	}
	if _, err := c.ResolveRevision(ctx, Model, "no-slash", "main"); err == nil {
		t.Error("bad repo name accepted")
	}
}

func TestListFilesPaginates(t *testing.T) {
	t.Parallel()
	h := hubtest.New(t)
	h.PageSize = 2
	files := map[string][]byte{
		"README.md": []byte("# hi\n"), "data/test-00000-of-00001.parquet": bytes.Repeat([]byte("p"), 300),
		"data/train.jsonl": []byte("{}\n"), "config.json": []byte("{}"), "sub/dir/x.bin": []byte("xx"),
	}
	h.Add("datasets/acme/docs", shaA, files, "data/test-00000-of-00001.parquet")
	c, _ := newClient(t, h, nil)
	got, err := c.ListFiles(context.Background(), Dataset, "acme/docs", shaA)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range got {
		paths = append(paths, f.Path)
		if f.Size != int64(len(files[f.Path])) {
			t.Errorf("%s: size %d", f.Path, f.Size)
		}
	}
	want := "README.md config.json data/test-00000-of-00001.parquet data/train.jsonl sub/dir/x.bin"
	if strings.Join(paths, " ") != want {
		t.Errorf("paths %q, want %q", paths, want)
	}
	if sha := got[2].SHA256(); sha != hubtest.SHA256(files["data/test-00000-of-00001.parquet"]) {
		t.Errorf("LFS sha256 %q", sha)
	}
	if got[0].SHA256() != "" || got[0].OID != hubtest.GitOID(files["README.md"]) {
		t.Errorf("README entry %+v", got[0])
	}
	// 5 files + 3 directories at 2 a page: 4 pages.
	if n := h.Count("GET /api/datasets/acme/docs/tree/" + shaA); n != 4 {
		t.Errorf("%d tree requests, want 4", n)
	}
	if _, err := c.ListFiles(context.Background(), Dataset, "acme/docs", "main"); err == nil {
		t.Error("listing at a branch name accepted")
	}
}

func TestDownload(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	tests := []struct {
		name     string
		token    string // the repository's gate
		env      map[string]string
		setup    func(h *hubtest.Hub)
		wantErr  string
		wantCDN  int      // requests that reached the CDN
		wantRng  []string // Range headers sent
		wantWait int      // retries slept
	}{
		{name: "plain", wantCDN: 1},
		{name: "gated with token", token: "sekret", env: map[string]string{"HF_TOKEN": "sekret"}, wantCDN: 1},
		{name: "gated without token", token: "sekret", wantErr: "set HF_TOKEN"},
		{name: "500 then success", setup: func(h *hubtest.Hub) { h.Fail("/acme/m/resolve/"+shaA+"/model.gguf", 2) }, wantCDN: 1, wantWait: 2},
		{name: "truncated then resumed", setup: func(h *hubtest.Hub) { h.Truncate("model.gguf", 10000) }, wantCDN: 2, wantRng: []string{"bytes=10000-"}, wantWait: 1},
		{name: "truncated, server ignores Range", setup: func(h *hubtest.Hub) { h.Truncate("model.gguf", 10000); h.IgnoreRange() }, wantCDN: 2, wantRng: []string{"bytes=10000-"}, wantWait: 1},
		{name: "corrupt", setup: func(h *hubtest.Hub) { h.Corrupt("model.gguf", true) }, wantErr: "sha256 mismatch", wantCDN: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := hubtest.New(t)
			h.Add("acme/m", shaA, map[string][]byte{"model.gguf": big}, "model.gguf").Gate(tt.token)
			if tt.setup != nil {
				tt.setup(h)
			}
			c, slept := newClient(t, h, tt.env)
			local, err := c.Fetch(context.Background(), Model, "acme/m", shaA, "model.gguf")
			final := filepath.Join(c.CacheDir, "files", "models", "acme", "m", shaA, "model.gguf")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				if _, err := os.Stat(final); !os.IsNotExist(err) {
					t.Errorf("cache holds %s after a failed download", final)
				}
				if part := filepath.Join(c.CacheDir, "partial", "models", "acme", "m", shaA, "model.gguf.part"); fileExists(part) {
					t.Errorf("partial file left after a hash failure")
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if local != final {
					t.Errorf("path %q, want %q", local, final)
				}
				if b, _ := os.ReadFile(local); !bytes.Equal(b, big) {
					t.Errorf("content differs")
				}
			}
			if n := h.Count("GET /repos/"); n != tt.wantCDN {
				t.Errorf("%d CDN requests, want %d (%v)", n, tt.wantCDN, h.Requests())
			}
			if rg := h.Ranges(); strings.Join(rg, ",") != strings.Join(tt.wantRng, ",") {
				t.Errorf("ranges %q, want %q", rg, tt.wantRng)
			}
			if len(*slept) != tt.wantWait {
				t.Errorf("slept %v, want %d waits", *slept, tt.wantWait)
			}
		})
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// newClient points a hub client at the fake, with an empty cache and no
// waits: the waits it would have slept are recorded instead.
func newClient(t *testing.T, h *hubtest.Hub, env map[string]string) (*Client, *[]time.Duration) {
	vars := map[string]string{"HF_ENDPOINT": h.URL, "UDGAM_CI_CACHE": t.TempDir()}
	for k, v := range env {
		vars[k] = v
	}
	c := New(func(k string) string { return vars[k] })
	var slept []time.Duration
	c.Sleep = func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }
	return c, &slept
}

func TestDownloadSmallGitFileChecksBlobID(t *testing.T) {
	t.Parallel()
	h := hubtest.New(t)
	h.Add("datasets/acme/d", shaA, map[string][]byte{"test.jsonl": []byte(`{"id":"a","text":"x"}` + "\n")})
	h.Corrupt("test.jsonl", true)
	c, _ := newClient(t, h, nil)
	_, err := c.Fetch(context.Background(), Dataset, "acme/d", shaA, "test.jsonl")
	if err == nil || !strings.Contains(err.Error(), "git blob id mismatch") {
		t.Fatalf("err %v, want a git blob id mismatch", err)
	}
	h.Corrupt("test.jsonl", false)
	if _, err := c.Fetch(context.Background(), Dataset, "acme/d", shaA, "test.jsonl"); err != nil {
		t.Fatalf("clean retry: %v", err)
	}
}

func TestResolveReusesCacheOffline(t *testing.T) {
	t.Parallel()
	h := hubtest.New(t)
	body := []byte(`{"id":"a","text":"hello"}` + "\n")
	h.Add("datasets/udgamlabs/fresh", shaA, map[string][]byte{"README.md": []byte("x"), "data/test.jsonl": body})
	c, _ := newClient(t, h, nil)
	ctx := context.Background()
	for _, ref := range []string{"hf://udgamlabs/fresh@" + shaA, "hf://udgamlabs/fresh@" + shaA + "/data/test.jsonl"} {
		res, err := c.Resolve(ctx, ref, Dataset)
		if err != nil {
			t.Fatal(err)
		}
		if res.Ref.Path != "data/test.jsonl" || res.Ref.Revision != shaA || res.File.Size != int64(len(body)) {
			t.Errorf("%s: resolved %+v", ref, res)
		}
	}
	before := len(h.Requests())
	h.Close() // offline from here on
	for _, ref := range []string{"hf://udgamlabs/fresh@" + shaA, "hf://datasets/udgamlabs/fresh@" + shaA + "/data/test.jsonl"} {
		res, err := c.Resolve(ctx, ref, Dataset)
		if err != nil {
			t.Fatalf("offline %s: %v", ref, err)
		}
		if b, _ := os.ReadFile(res.Path); !bytes.Equal(b, body) {
			t.Errorf("offline %s: content differs", ref)
		}
	}
	if got := h.Requests(); len(got) != before {
		t.Errorf("offline resolves made requests: %v", got[before:])
	}

	// HF_HUB_OFFLINE: the cache answers, anything else fails without a request.
	off, _ := newClient(t, h, map[string]string{"HF_HUB_OFFLINE": "1", "UDGAM_CI_CACHE": c.CacheDir})
	if !off.Offline {
		t.Fatal("HF_HUB_OFFLINE=1 not read")
	}
	if _, err := off.Resolve(ctx, "hf://udgamlabs/fresh@"+shaA, Dataset); err != nil {
		t.Errorf("offline client, cached file: %v", err)
	}
	if _, err := off.Resolve(ctx, "hf://udgamlabs/other@"+shaA, Dataset); !errors.Is(err, ErrOffline) {
		t.Errorf("offline client, uncached repo: %v, want ErrOffline", err)
	}
	if got := h.Requests(); len(got) != before {
		t.Errorf("offline client made requests: %v", got[before:])
	}
}

func TestResolvePinning(t *testing.T) {
	t.Parallel()
	h := hubtest.New(t)
	h.Add("datasets/udgamlabs/udgam-probes", shaB, map[string][]byte{"data/test-00000-of-00001.parquet": []byte("PAR1"), "data/train-00000-of-00001.parquet": []byte("PAR1x")})
	c, _ := newClient(t, h, nil)
	ctx := context.Background()
	if _, err := c.Resolve(ctx, "hf://udgamlabs/udgam-probes@main", Dataset); err == nil || !strings.Contains(err.Error(), "not a 40-hex commit sha") {
		t.Fatalf("unpinned: err %v", err)
	}
	if got := h.Requests(); len(got) != 0 {
		t.Errorf("a refused reference made requests: %v", got)
	}
	res, err := c.ResolveWith(ctx, "hf://udgamlabs/udgam-probes@main", ResolveOptions{Kind: Dataset, AllowUnpinned: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ref.Revision != shaB || res.Ref.Path != "data/test-00000-of-00001.parquet" {
		t.Errorf("resolved %+v", res.Ref)
	}
	if want := "hf://datasets/udgamlabs/udgam-probes@" + shaB + "/data/test-00000-of-00001.parquet"; res.Ref.String() != want {
		t.Errorf("String() %q, want %q", res.Ref.String(), want)
	}
	if _, err := c.Resolve(ctx, "hf://models/udgamlabs/udgam-probes@"+shaB, Dataset); err == nil {
		t.Error("a model reference was accepted as a dataset")
	}
	if _, err := c.Resolve(ctx, "hf://udgamlabs/udgam-probes@"+shaB+"/missing.jsonl", Dataset); err == nil || !strings.Contains(err.Error(), "no file") {
		t.Errorf("missing file: %v", err)
	}
}

func TestParseRef(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want Ref
		err  string
	}{
		{in: "hf://o/n@" + shaA, want: Ref{Repo: "o/n", Revision: shaA}},
		{in: "hf://o/n@main/data/test.jsonl", want: Ref{Repo: "o/n", Revision: "main", Path: "data/test.jsonl"}},
		{in: "hf://datasets/o/n@v1", want: Ref{Kind: Dataset, Repo: "o/n", Revision: "v1"}},
		{in: "hf://models/o/n.x@abc/m.gguf", want: Ref{Kind: Model, Repo: "o/n.x", Revision: "abc", Path: "m.gguf"}},
		{in: "o/n@main", err: "want hf://"},
		{in: "hf://o/n", err: "no @REVISION"},
		{in: "hf://o@x", err: "want OWNER/NAME"},
		{in: "hf://o/n@", err: "empty revision"},
		{in: "hf://o/n@x/../../etc/passwd", err: "bad repository path"},
		{in: "hf://o/n@x/a//b", err: "bad repository path"},
		{in: "hf://o/../n@x", err: "want OWNER/NAME"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseRef(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
			if back, _ := ParseRef(got.String()); back != got {
				t.Errorf("String() does not round-trip: %q", got.String())
			}
		})
	}
}

func TestPickDataFile(t *testing.T) {
	t.Parallel()
	f := func(ps ...string) []File {
		var out []File
		for _, p := range ps {
			out = append(out, File{Type: "file", Path: p})
		}
		return out
	}
	tests := []struct {
		name, split string
		files       []File
		want, err   string
	}{
		{"single file anywhere", "test", f("README.md", "docs.jsonl"), "docs.jsonl", ""},
		{"split by stem", "test", f("train.jsonl", "test.jsonl"), "test.jsonl", ""},
		{"hub parquet layout", "test", f("data/train-00000-of-00002.parquet", "data/test-00000-of-00001.parquet", "README.md"), "data/test-00000-of-00001.parquet", ""},
		{"split directory", "validation", f("train/a.jsonl", "validation/a.jsonl"), "validation/a.jsonl", ""},
		{"prefix is not a split", "test", f("testing.jsonl", "train.jsonl"), "", "no data file for split"},
		{"sharded split", "test", f("data/test-00000-of-00002.parquet", "data/test-00001-of-00002.parquet"), "", "several data files"},
		{"no data", "test", f("README.md", "x.csv"), "", "no .jsonl or .parquet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PickDataFile(tt.files, tt.split)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || got.Path != tt.want {
				t.Fatalf("got %q, %v; want %q", got.Path, err, tt.want)
			}
		})
	}
}

func TestProgressLines(t *testing.T) {
	t.Parallel()
	h := hubtest.New(t)
	h.Add("acme/m", shaA, map[string][]byte{"m.gguf": bytes.Repeat([]byte("z"), 3<<20)}, "m.gguf")
	c, _ := newClient(t, h, nil)
	var out bytes.Buffer
	c.Progress = &out
	clock := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	c.Now = func() time.Time { clock = clock.Add(time.Second); return clock }
	if _, err := c.Fetch(context.Background(), Model, "acme/m", shaA, "m.gguf"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 3 || lines[0] != "download acme/m/m.gguf: 3.0 MiB" ||
		!strings.HasPrefix(lines[len(lines)-1], "download acme/m/m.gguf: 100% 3.0 MiB of 3.0 MiB in ") {
		t.Errorf("progress output:\n%s", out.String())
	}
}

// TestHubErrorCodes: the hub's error codes reach the message and
// ErrNotFound, so an unknown repository (401 to an anonymous request, as
// for a private one) is not told to set a token alone.
func TestHubErrorCodes(t *testing.T) {
	t.Parallel()
	h := hubtest.New(t)
	h.Add("acme/gated", shaA, map[string][]byte{"config.json": []byte(`{}`)}).Gate("sekret")
	h.Add("acme/tiny", shaA, map[string][]byte{"config.json": []byte(`{}`)})
	c, _ := newClient(t, h, nil)
	ctx := context.Background()
	cases := []struct {
		repo, rev, file string
		status          int
		code, want      string
		notFound        bool
	}{
		{"acme/nothing", shaA, "", 401, "RepoNotFound", "no such repository, or a private one", true},
		{"acme/gated", shaA, "", 401, "GatedRepo", "gated repository: accept its conditions", false},
		{"acme/tiny", shaB, "", 404, "RevisionNotFound", "no such repository, revision or file", true},
	}
	for _, tc := range cases {
		_, err := c.ListFiles(ctx, Model, tc.repo, tc.rev)
		var serr *StatusError
		if !errors.As(err, &serr) || serr.Status != tc.status || serr.Code != tc.code {
			t.Errorf("%s@%s: got %v, want status %d code %s", tc.repo, tc.rev, err, tc.status, tc.code)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || errors.Is(err, ErrNotFound) != tc.notFound {
			t.Errorf("%s@%s: %q (not found: %v), want it to say %q (not found: %v)", tc.repo, tc.rev, err, errors.Is(err, ErrNotFound), tc.want, tc.notFound)
		}
	}
	if _, err := c.Fetch(ctx, Model, "acme/tiny", shaA, "missing.json"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a file the listing lacks: %v, want ErrNotFound", err)
	}
}
