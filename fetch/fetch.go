// Package fetch gets a model from the Hugging Face hub as a GGUF file: at a
// pinned commit it downloads a GGUF of the requested type when the repository
// has one, and otherwise downloads the checkpoint (safetensors or
// pytorch_model.bin, at the top level or in a subfolder) and converts it.
// config.json is read first: an architecture the converter does not take is
// refused before any weights are downloaded. Results are cached by
// repository, commit, subfolder and type.
package fetch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/udgamlabs/udgam-ci/convert"
	"github.com/udgamlabs/udgam-ci/hub"
	"github.com/udgamlabs/udgam-ci/internal/atomicfile"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Hub is the part of the hub client fetching needs (*hub.Client has it).
type Hub interface {
	ResolveRevision(ctx context.Context, kind hub.Kind, repo, rev string) (string, error)
	CachedFiles(ctx context.Context, kind hub.Kind, repo, sha string) ([]hub.File, error)
	Download(ctx context.Context, kind hub.Kind, repo, sha string, f hub.File) (string, error)
}

// Options say what to fetch.
type Options struct {
	Repo          string // OWNER/NAME
	Revision      string // a commit sha; a branch or tag only with AllowUnpinned
	AllowUnpinned bool
	Dtype         string // f32 (default), f16, bf16, q8_0
	CacheDir      string // converted GGUFs live under CacheDir/gguf
	// Subfolder is the checkpoint's directory in the repository, for
	// repositories that keep it below the top level.
	Subfolder string
	// AllowUnverifiedTokenizer converts a tokenizer whose equality with the
	// Hugging Face tokenizer is not established (recorded in the GGUF).
	AllowUnverifiedTokenizer bool
}

// Model is a fetched model: its GGUF and what a run header records of it.
type Model struct {
	Path  string
	Model runfile.Model // Name, Revision (full sha), File, SHA256, Dtype, Conversion
}

// Fetch returns the model's GGUF, from the cache when an earlier fetch made
// it. The revision is resolved to a commit first (only when allowed), so the
// cache key is always a commit.
func Fetch(ctx context.Context, h Hub, opts Options) (Model, error) {
	if opts.Dtype == "" {
		opts.Dtype = convert.DefaultDtype
	}
	if !slices.Contains(convert.Dtypes, opts.Dtype) {
		return Model{}, fmt.Errorf("fetch %s: dtype %q, want one of %s", opts.Repo, opts.Dtype, strings.Join(convert.Dtypes, ", "))
	}
	if opts.CacheDir == "" {
		return Model{}, errors.New("fetch: no cache directory")
	}
	sha := opts.Revision
	if !runfile.IsCommit(sha) {
		if !opts.AllowUnpinned {
			return Model{}, fmt.Errorf("fetch %s: revision %q is not a 40-hex commit sha; pin the model to a commit (or pass --allow-unpinned; in the Action, allow-unpinned: true)", opts.Repo, opts.Revision)
		}
		var err error
		if sha, err = h.ResolveRevision(ctx, hub.Model, opts.Repo, opts.Revision); err != nil {
			return Model{}, err
		}
	}
	sub, err := cleanSubfolder(opts.Subfolder)
	if err != nil {
		return Model{}, fmt.Errorf("fetch %s: %w", opts.Repo, err)
	}
	dir := filepath.Join(opts.CacheDir, "gguf", filepath.FromSlash(opts.Repo), sha)
	if sub != "" {
		dir = filepath.Join(dir, "subfolder", filepath.FromSlash(sub))
	}
	name := opts.Dtype
	if opts.AllowUnverifiedTokenizer {
		// Never served to a fetch that did not allow it.
		name += "-unverified-tokenizer"
	}
	out := filepath.Join(dir, name+".gguf")
	if m, ok := readRecord(out); ok {
		return m, nil
	}

	files, err := h.CachedFiles(ctx, hub.Model, opts.Repo, sha)
	if err != nil {
		return Model{}, err
	}
	base := runfile.Model{Name: opts.Repo, Revision: sha, Dtype: opts.Dtype}
	if f, ok := pickGGUF(files, sub, opts.Dtype); ok {
		local, err := h.Download(ctx, hub.Model, opts.Repo, sha, f)
		if err != nil {
			return Model{}, err
		}
		base.File = path.Base(f.Path)
		if base.SHA256 = f.SHA256(); base.SHA256 == "" {
			if base.SHA256, err = fileSHA256(local); err != nil {
				return Model{}, err
			}
		}
		// The hub's cache already holds the file; the record points at it.
		m := Model{Path: local, Model: base}
		return m, writeRecord(out, m)
	}

	ckpt, err := checkpointFiles(files, sub)
	if err != nil {
		return Model{}, fmt.Errorf("fetch %s@%s: %w", opts.Repo, sha, err)
	}
	// Link the downloaded files into one directory: the converter reads a
	// checkpoint directory, the hub cache keeps each file where it likes.
	link := filepath.Join(opts.CacheDir, "checkpoints", filepath.FromSlash(opts.Repo), sha)
	if sub != "" {
		link = filepath.Join(link, "subfolder", filepath.FromSlash(sub))
	}
	if err := os.MkdirAll(link, 0o755); err != nil {
		return Model{}, err
	}
	// config.json comes first, and says whether the converter takes the
	// architecture, before any weights are downloaded.
	for i, f := range ckpt {
		local, err := h.Download(ctx, hub.Model, opts.Repo, sha, f)
		if err != nil {
			return Model{}, err
		}
		dst := filepath.Join(link, path.Base(f.Path))
		os.Remove(dst)
		abs, err := filepath.Abs(local)
		if err != nil {
			return Model{}, err
		}
		if err := os.Symlink(abs, dst); err != nil {
			return Model{}, fmt.Errorf("link %s: %w", dst, err)
		}
		if i == 0 {
			if _, err := convert.Check(os.DirFS(link)); err != nil {
				return Model{}, fmt.Errorf("fetch %s@%s: %w", opts.Repo, sha, err)
			}
		}
	}
	source := opts.Repo + "@" + sha
	if sub != "" {
		source += " subfolder " + sub
	}
	m, _, err := Convert(link, out, convert.Options{Dtype: opts.Dtype, Source: source, AllowUnverifiedTokenizer: opts.AllowUnverifiedTokenizer})
	if err != nil {
		return Model{}, fmt.Errorf("fetch %s@%s: %w", opts.Repo, sha, err)
	}
	m.Model.Name, m.Model.Revision = base.Name, base.Revision
	return m, writeRecord(out, m)
}

// Convert converts the checkpoint in directory dir to out: what Fetch does
// with a downloaded checkpoint, and what `udgam-ci model convert` and the
// action do with a local one. The result says what the conversion decided
// (the tokenizer's report).
func Convert(dir, out string, opts convert.Options) (Model, convert.Result, error) {
	res, err := convert.Dir(dir, out, opts)
	if err != nil {
		return Model{}, res, err
	}
	conv := res.Conversion
	m := Model{Path: out, Model: runfile.Model{File: filepath.Base(out), SHA256: res.SHA256, Arch: res.Arch,
		Dtype: conv.Dtype, Conversion: &conv}}
	return m, res, nil
}

// pickGGUF finds a GGUF (in the subfolder, when one is given) whose name
// carries the dtype as a word, such as model-f16.gguf or
// SmolLM2-135M.Q8_0.gguf; the shortest path wins.
func pickGGUF(files []hub.File, sub, dtype string) (hub.File, bool) {
	re := regexp.MustCompile(`(^|[^a-z0-9])` + regexp.QuoteMeta(dtype) + `([^a-z0-9]|$)`)
	var best hub.File
	found := false
	for _, f := range files {
		if sub != "" && !strings.HasPrefix(f.Path, sub+"/") {
			continue
		}
		name := strings.ToLower(path.Base(f.Path))
		if !strings.HasSuffix(name, ".gguf") || !re.MatchString(strings.TrimSuffix(name, ".gguf")) {
			continue
		}
		if !found || len(f.Path) < len(best.Path) {
			best, found = f, true
		}
	}
	return best, found
}

// checkpointFiles picks what conversion needs from the repository's top
// level, or its subfolder: config.json first, the tokenizer files, and the
// weights of one format (safetensors when present, as transformers prefers,
// else pytorch_model.bin), with their shard index.
func checkpointFiles(files []hub.File, sub string) ([]hub.File, error) {
	prefix := ""
	if sub != "" {
		prefix = sub + "/"
	}
	var config, tok, st, bin []hub.File
	for _, f := range files {
		name, ok := strings.CutPrefix(f.Path, prefix)
		if !ok || strings.Contains(name, "/") {
			continue
		}
		switch {
		case name == "config.json":
			config = append(config, f)
		case slices.Contains(tokenizerFiles, name):
			tok = append(tok, f)
		case strings.HasSuffix(name, ".safetensors"), name == "model.safetensors.index.json":
			st = append(st, f)
		case name == "pytorch_model.bin", name == "pytorch_model.bin.index.json",
			strings.HasPrefix(name, "pytorch_model-") && strings.HasSuffix(name, ".bin"):
			bin = append(bin, f)
		}
	}
	weights := st
	if len(weights) == 0 {
		weights = bin
	}
	var missing []string
	if len(config) == 0 {
		missing = append(missing, "config.json")
	}
	if len(tok) == 0 {
		missing = append(missing, "a tokenizer (tokenizer.json, tokenizer.model or vocab.json)")
	}
	if len(weights) == 0 {
		missing = append(missing, "weights (*.safetensors or pytorch_model.bin)")
	}
	if len(missing) > 0 {
		where := "the repository's top level"
		if sub != "" {
			where = "subfolder " + sub
		}
		return nil, fmt.Errorf("no GGUF for the dtype and no checkpoint in %s: missing %s", where, strings.Join(missing, ", "))
	}
	return append(append(config, tok...), weights...), nil
}

// tokenizerFiles are the files a tokenizer may be converted from.
var tokenizerFiles = []string{"tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json", "merges.txt",
	"special_tokens_map.json", "added_tokens.json", "generation_config.json"}

// cleanSubfolder checks a subfolder: a relative path inside the repository.
func cleanSubfolder(sub string) (string, error) {
	if sub == "" {
		return "", nil
	}
	c := path.Clean(strings.Trim(sub, "/"))
	if !fs.ValidPath(c) || c == "." || strings.HasPrefix(sub, "/") {
		return "", fmt.Errorf("subfolder %q is not a relative path inside the repository", sub)
	}
	return c, nil
}

// The record next to a cached GGUF says what it is, so a cache hit needs no
// network and no rehashing.
func recordPath(gguf string) string { return gguf + ".json" }

func readRecord(gguf string) (Model, bool) {
	b, err := os.ReadFile(recordPath(gguf))
	if err != nil {
		return Model{}, false
	}
	var m Model
	if json.Unmarshal(b, &m) != nil || m.Path == "" {
		return Model{}, false
	}
	if st, err := os.Stat(m.Path); err != nil || !st.Mode().IsRegular() {
		return Model{}, false
	}
	return m, true
}

func writeRecord(gguf string, m Model) error {
	if err := os.MkdirAll(filepath.Dir(gguf), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(recordPath(gguf), func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// CopyTo copies a fetched model to dst (the `model fetch --out` file), whole
// or not at all.
func CopyTo(m Model, dst string) error {
	in, err := os.Open(m.Path)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(dst, func(w io.Writer) error {
		if _, err := io.Copy(w, in); err != nil {
			return fmt.Errorf("copy %s: %w", m.Path, err)
		}
		return nil
	})
}
