package hub

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// Ref is a parsed hf://OWNER/NAME@REVISION[/path] reference. The optional
// fsspec-style type prefix (hf://datasets/OWNER/NAME@...) is accepted too.
type Ref struct {
	Kind     Kind   // "" when the reference did not say
	Repo     string // OWNER/NAME
	Revision string // as written: a commit sha, or a branch/tag name
	Path     string // a file in the repository, "" to pick by split
}

// IsRef reports whether s is written as a hub reference.
func IsRef(s string) bool { return strings.HasPrefix(s, "hf://") }

// String writes the reference back in its hf:// form.
func (r Ref) String() string {
	s := "hf://"
	if r.Kind != "" {
		s += string(r.Kind) + "s/"
	}
	s += r.Repo
	if r.Revision != "" {
		s += "@" + r.Revision
	}
	if r.Path != "" {
		s += "/" + r.Path
	}
	return s
}

// ParseRef parses hf://OWNER/NAME@REVISION[/path]. The revision runs to the
// next slash, so branch names containing slashes must be resolved to a sha
// first; a missing revision is an error (runs must say what they scored).
func ParseRef(s string) (Ref, error) {
	rest, ok := strings.CutPrefix(s, "hf://")
	if !ok {
		return Ref{}, fmt.Errorf("hub reference %q: want hf://OWNER/NAME@REVISION[/path]", s)
	}
	var r Ref
	for _, k := range []Kind{Dataset, Model} {
		if after, ok := strings.CutPrefix(rest, string(k)+"s/"); ok {
			r.Kind, rest = k, after
			break
		}
	}
	repo, rest, ok := strings.Cut(rest, "@")
	if !ok {
		return Ref{}, fmt.Errorf("hub reference %q: no @REVISION (pin a commit sha)", s)
	}
	r.Repo = repo
	if err := checkRepo(r.Repo); err != nil {
		return Ref{}, fmt.Errorf("hub reference %q: %w", s, err)
	}
	r.Revision, r.Path, _ = strings.Cut(rest, "/")
	if r.Revision == "" {
		return Ref{}, fmt.Errorf("hub reference %q: empty revision", s)
	}
	if r.Path != "" {
		if err := checkPath(r.Path); err != nil {
			return Ref{}, fmt.Errorf("hub reference %q: %w", s, err)
		}
	}
	return r, nil
}

// ResolveOptions tune Resolve.
type ResolveOptions struct {
	Kind Kind // the repository type when the reference does not say; default Dataset
	// Split picks the data file when the reference names no path; default "test".
	Split string
	// AllowUnpinned lets a branch or tag through; it is resolved to its
	// commit, which Resolved.Ref carries so the caller can record it.
	AllowUnpinned bool
}

// Resolved is a reference turned into a local, verified file.
type Resolved struct {
	Ref  Ref    // Revision is always the full commit sha; Path the chosen file
	File File   // the listing entry: size, git oid, LFS sha256
	Path string // the local file in the cache
}

// Resolve downloads (or finds in the cache) the file a dataset reference
// names, for a pinned revision, split test. See ResolveWith.
func (c *Client) Resolve(ctx context.Context, ref string, kind Kind) (Resolved, error) {
	return c.ResolveWith(ctx, ref, ResolveOptions{Kind: kind})
}

// ResolveWith turns an hf:// reference into a local file. A revision that
// is not a 40-hex commit sha is refused unless opts.AllowUnpinned. Without a
// path in the reference the file is chosen by PickDataFile.
func (c *Client) ResolveWith(ctx context.Context, ref string, opts ResolveOptions) (Resolved, error) {
	r, err := ParseRef(ref)
	if err != nil {
		return Resolved{}, err
	}
	kind := opts.Kind
	if kind == "" {
		kind = Dataset
	}
	if r.Kind != "" && r.Kind != kind {
		return Resolved{}, fmt.Errorf("hub reference %q: is a %s, want a %s", ref, r.Kind, kind)
	}
	r.Kind = kind
	if !runfile.IsCommit(r.Revision) {
		if !opts.AllowUnpinned {
			return Resolved{}, fmt.Errorf("hub reference %q: revision %q is not a 40-hex commit sha; pin one (or allow unpinned revisions)", ref, r.Revision)
		}
		sha, err := c.ResolveRevision(ctx, kind, r.Repo, r.Revision)
		if err != nil {
			return Resolved{}, err
		}
		r.Revision = sha
	}
	// A named file already in the cache needs nothing from the network.
	if r.Path != "" {
		local := c.cachePath("files", kind, r.Repo, r.Revision, r.Path)
		if f, ok := c.cachedEntry(kind, r.Repo, r.Revision, r.Path); ok && fileReady(local, f) {
			return Resolved{Ref: r, File: f, Path: local}, nil
		}
	}
	files, err := c.CachedFiles(ctx, kind, r.Repo, r.Revision)
	if err != nil {
		return Resolved{}, fmt.Errorf("hub reference %q: %w", ref, err)
	}
	var f File
	if r.Path == "" {
		split := opts.Split
		if split == "" {
			split = "test"
		}
		if f, err = PickDataFile(files, split); err != nil {
			return Resolved{}, fmt.Errorf("hub reference %q: %w", ref, err)
		}
		r.Path = f.Path
	} else {
		i := sort.Search(len(files), func(i int) bool { return files[i].Path >= r.Path })
		if i == len(files) || files[i].Path != r.Path {
			return Resolved{}, fmt.Errorf("hub reference %q: no file %q at %s", ref, r.Path, r.Revision)
		}
		f = files[i]
	}
	local, err := c.Download(ctx, kind, r.Repo, r.Revision, f)
	if err != nil {
		return Resolved{}, err
	}
	return Resolved{Ref: r, File: f, Path: local}, nil
}

// cachedEntry finds a file's listing entry in the cached tree, if any.
func (c *Client) cachedEntry(kind Kind, repo, sha, p string) (File, bool) {
	files, ok := c.cachedTree(kind, repo, sha)
	if !ok {
		return File{}, false
	}
	for _, f := range files {
		if f.Path == p {
			return f, true
		}
	}
	return File{}, false
}

// dataExts are the formats the loaders read.
var dataExts = []string{".jsonl", ".parquet"}

// PickDataFile chooses the data file of a split from a repository listing:
//
//  1. the only .jsonl or .parquet file of the repository, if there is one;
//  2. else the only data file that belongs to the split: its name without
//     extension is the split ("test.jsonl") or starts with the split and a
//     '-', '_' or '.' ("data/test-00000-of-00001.parquet"), or one of its
//     directories is the split ("test/docs.jsonl").
//
// Several matches (a sharded split) or none is an error listing the
// candidates: name the file in the reference then.
func PickDataFile(files []File, split string) (File, error) {
	var data, match []File
	for _, f := range files {
		if !isDataFile(f.Path) {
			continue
		}
		data = append(data, f)
		if inSplit(f.Path, split) {
			match = append(match, f)
		}
	}
	switch {
	case len(data) == 1:
		return data[0], nil
	case len(data) == 0:
		return File{}, fmt.Errorf("no .jsonl or .parquet file in the repository")
	case len(match) == 1:
		return match[0], nil
	case len(match) == 0:
		return File{}, fmt.Errorf("no data file for split %q among %s; name one in the reference", split, paths(data))
	default:
		return File{}, fmt.Errorf("several data files for split %q (%s); name one in the reference", split, paths(match))
	}
}

func isDataFile(p string) bool {
	for _, e := range dataExts {
		if strings.HasSuffix(p, e) {
			return true
		}
	}
	return false
}

func inSplit(p, split string) bool {
	dir, base := path.Split(p)
	for _, d := range strings.Split(strings.Trim(dir, "/"), "/") {
		if d == split {
			return true
		}
	}
	stem := strings.TrimSuffix(base, path.Ext(base))
	if stem == split {
		return true
	}
	rest, ok := strings.CutPrefix(stem, split)
	return ok && rest != "" && strings.ContainsRune("-_.", rune(rest[0]))
}

func paths(files []File) string {
	ps := make([]string, len(files))
	for i, f := range files {
		ps[i] = f.Path
	}
	return strings.Join(ps, ", ")
}
