package hub

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// File is one file of a repository at a commit, as the hub's tree API lists
// it. OID is the git blob id; files stored with LFS (or Xet) also carry
// their sha256 and size under LFS.
type File struct {
	Type string `json:"type"` // "file" or "directory"
	Path string `json:"path"`
	Size int64  `json:"size"`
	OID  string `json:"oid"`
	LFS  *LFS   `json:"lfs,omitempty"`
}

// LFS is the large-file pointer of a file: the sha256 of its content.
type LFS struct {
	OID         string `json:"oid"`
	Size        int64  `json:"size"`
	PointerSize int64  `json:"pointerSize,omitempty"`
}

// SHA256 returns the file's content sha256 when the hub knows it (LFS
// files), else "".
func (f File) SHA256() string {
	if f.LFS != nil {
		return f.LFS.OID
	}
	return ""
}

// ContentSize is the size of the file's bytes (for LFS files the tree's
// size is already the content's, but the pointer says it too).
func (f File) ContentSize() int64 {
	if f.LFS != nil && f.LFS.Size > 0 {
		return f.LFS.Size
	}
	return f.Size
}

// ResolveRevision turns a branch, tag or commit into the full commit sha the
// hub has for it now.
func (c *Client) ResolveRevision(ctx context.Context, kind Kind, repo, rev string) (string, error) {
	if err := checkRepo(repo); err != nil {
		return "", err
	}
	if rev == "" {
		rev = "main"
	}
	var info struct {
		SHA string `json:"sha"`
	}
	if _, err := c.getJSON(ctx, c.apiURL(kind, repo, "revision", url.PathEscape(rev)), &info); err != nil {
		return "", fmt.Errorf("resolve %s %s@%s: %w", kind, repo, rev, err)
	}
	if !runfile.IsCommit(info.SHA) {
		return "", fmt.Errorf("resolve %s %s@%s: hub answered sha %q, not a commit", kind, repo, rev, info.SHA)
	}
	return info.SHA, nil
}

// ListFiles lists every file (not directories) of a repository at a commit,
// sorted by path. It follows the hub's Link pagination.
func (c *Client) ListFiles(ctx context.Context, kind Kind, repo, sha string) ([]File, error) {
	if err := checkRepo(repo); err != nil {
		return nil, err
	}
	if !runfile.IsCommit(sha) {
		return nil, fmt.Errorf("list %s %s: revision %q is not a commit sha", kind, repo, sha)
	}
	var files []File
	next := c.apiURL(kind, repo, "tree", sha) + "?recursive=true"
	for pages := 0; next != ""; pages++ {
		if pages > 10000 {
			return nil, fmt.Errorf("list %s %s@%s: too many pages", kind, repo, sha)
		}
		var page []File
		h, err := c.getJSON(ctx, next, &page)
		if err != nil {
			return nil, fmt.Errorf("list %s %s@%s: %w", kind, repo, sha, err)
		}
		for _, f := range page {
			if f.Type == "file" {
				files = append(files, f)
			}
		}
		if next, err = nextLink(next, h); err != nil {
			return nil, fmt.Errorf("list %s %s@%s: %w", kind, repo, sha, err)
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

// nextLink finds rel="next" in a Link header (GitHub style, as the hub
// paginates), resolved against the current URL.
func nextLink(cur string, h http.Header) (string, error) {
	for _, v := range h.Values("Link") {
		for _, part := range strings.Split(v, ",") {
			target, params, ok := strings.Cut(strings.TrimSpace(part), ";")
			if !ok || !strings.Contains(strings.ReplaceAll(params, " ", ""), `rel="next"`) {
				continue
			}
			target = strings.Trim(strings.TrimSpace(target), "<>")
			base, err := url.Parse(cur)
			if err != nil {
				return "", err
			}
			ref, err := url.Parse(target)
			if err != nil {
				return "", fmt.Errorf("bad Link header %q: %w", v, err)
			}
			next := base.ResolveReference(ref)
			// The token goes with every page: never to another host.
			if next.Host != base.Host {
				return "", fmt.Errorf("Link header points to another host: %s", next.Host)
			}
			return next.String(), nil
		}
	}
	return "", nil
}
