package hub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/udgamlabs/udgam-ci/internal/atomicfile"
	"github.com/udgamlabs/udgam-ci/internal/retry"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// Cache layout under CacheDir (all keyed by an immutable commit sha):
//
//	files/<kind>s/<owner>/<name>/<sha>/<path>     verified files only
//	partial/<kind>s/<owner>/<name>/<sha>/<path>.part  downloads in progress
//	trees/<kind>s/<owner>/<name>/<sha>.json       file listings
//
// A file appears under files/ only after its size and hash were checked, so
// its presence alone lets later runs skip the network.

func (c *Client) cachePath(area string, kind Kind, repo, sha, p string) string {
	return filepath.Join(c.CacheDir, area, string(kind)+"s", filepath.FromSlash(repo), sha, filepath.FromSlash(p))
}

// checkPath refuses repository paths that could escape the cache.
func checkPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "." || strings.HasPrefix(p, "../") || p == ".." {
		return fmt.Errorf("bad repository path %q", p)
	}
	return nil
}

// CachedFiles lists a repository at a commit like ListFiles, reading and
// keeping the listing in the cache (a commit's tree never changes).
func (c *Client) CachedFiles(ctx context.Context, kind Kind, repo, sha string) ([]File, error) {
	if err := checkRepo(repo); err != nil {
		return nil, err
	}
	if !runfile.IsCommit(sha) {
		return nil, fmt.Errorf("list %s %s: revision %q is not a commit sha", kind, repo, sha)
	}
	if files, ok := c.cachedTree(kind, repo, sha); ok {
		return files, nil
	}
	files, err := c.ListFiles(ctx, kind, repo, sha)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(files)
	if err != nil {
		return nil, err
	}
	if err := writeAtomic(c.treePath(kind, repo, sha), b); err != nil {
		return nil, fmt.Errorf("cache listing of %s: %w", repo, err)
	}
	return files, nil
}

func (c *Client) treePath(kind Kind, repo, sha string) string {
	return filepath.Join(c.CacheDir, "trees", string(kind)+"s", filepath.FromSlash(repo), sha+".json")
}

// cachedTree reads a listing kept by CachedFiles; ok is false when there is
// none (or it is unreadable, and will be fetched again).
func (c *Client) cachedTree(kind Kind, repo, sha string) ([]File, bool) {
	b, err := os.ReadFile(c.treePath(kind, repo, sha))
	if err != nil {
		return nil, false
	}
	var files []File
	if err := json.Unmarshal(b, &files); err != nil {
		return nil, false
	}
	return files, true
}

// fileReady reports whether a verified copy of f is in the cache.
func fileReady(local string, f File) bool {
	st, err := os.Stat(local)
	return err == nil && st.Mode().IsRegular() && st.Size() == f.ContentSize()
}

// writeAtomic writes b at p through atomicfile, creating p's directory.
func writeAtomic(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(p, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// Fetch returns the local path of one file of a repository at a commit,
// downloading it when the cache does not hold it yet. A cached file costs
// no request at all.
func (c *Client) Fetch(ctx context.Context, kind Kind, repo, sha, p string) (string, error) {
	if err := checkPath(p); err != nil {
		return "", err
	}
	if err := checkRepo(repo); err != nil {
		return "", err
	}
	if !runfile.IsCommit(sha) {
		return "", fmt.Errorf("fetch %s %s/%s: revision %q is not a commit sha", kind, repo, p, sha)
	}
	final := c.cachePath("files", kind, repo, sha, p)
	if st, err := os.Stat(final); err == nil && st.Mode().IsRegular() {
		return final, nil
	}
	files, err := c.CachedFiles(ctx, kind, repo, sha)
	if err != nil {
		return "", err
	}
	for _, f := range files {
		if f.Path == p {
			return c.Download(ctx, kind, repo, sha, f)
		}
	}
	return "", fmt.Errorf("fetch %s %s@%s: no file %q in the repository: %w", kind, repo, sha, p, ErrNotFound)
}

// errRestart asks Download for another try after a discarded partial file.
var errRestart = errors.New("partial download did not match the remote file; starting over")

// Download fetches f into the cache and returns its local path. The bytes
// go to a .part file first, a broken transfer resumes from it with a Range
// request, and only a file whose size and hash match the listing is moved
// into place. A hash mismatch deletes the partial file.
func (c *Client) Download(ctx context.Context, kind Kind, repo, sha string, f File) (string, error) {
	if err := checkPath(f.Path); err != nil {
		return "", err
	}
	if err := checkRepo(repo); err != nil {
		return "", err
	}
	if !runfile.IsCommit(sha) {
		return "", fmt.Errorf("download %s %s/%s: revision %q is not a commit sha", kind, repo, f.Path, sha)
	}
	final := c.cachePath("files", kind, repo, sha, f.Path)
	if fileReady(final, f) {
		return final, nil
	}
	part := c.cachePath("partial", kind, repo, sha, f.Path) + ".part"
	if err := os.MkdirAll(filepath.Dir(part), 0o755); err != nil {
		return "", err
	}
	name := repo + "/" + f.Path
	u := c.fileURL(kind, repo, sha, f.Path)
	for attempt := 0; ; attempt++ {
		err := c.fetchInto(ctx, u, part, f.ContentSize(), name)
		if err == nil {
			break
		}
		var serr *StatusError
		if ctx.Err() != nil || errors.As(err, &serr) || attempt >= c.Retries {
			return "", fmt.Errorf("download %s@%s: %w", name, sha[:12], err)
		}
		// A broken body: keep what arrived and ask for the rest.
		if err := c.Sleep(ctx, retry.Backoff(attempt, nil, c.Now())); err != nil {
			return "", err
		}
	}
	if err := verify(part, f); err != nil {
		os.Remove(part)
		return "", fmt.Errorf("download %s@%s: %w", name, sha[:12], err)
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(part, final); err != nil {
		return "", fmt.Errorf("download %s: %w", name, err)
	}
	return final, nil
}

// fetchInto appends the missing bytes of a file to part, starting over
// when the server ignores the Range request.
func (c *Client) fetchInto(ctx context.Context, u, part string, want int64, name string) error {
	out, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	have, err := out.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	if have > want {
		if err := out.Truncate(0); err != nil {
			return err
		}
		have = 0
	}
	if have == want {
		return nil
	}
	resp, err := c.do(ctx, u, func(r *http.Request) {
		if have > 0 {
			r.Header.Set("Range", "bytes="+strconv.FormatInt(have, 10)+"-")
		}
	})
	var serr *StatusError
	if errors.As(err, &serr) && serr.Status == http.StatusRequestedRangeNotSatisfiable {
		// The partial file no longer fits the remote one: start over.
		if err := out.Truncate(0); err != nil {
			return err
		}
		return errRestart
	}
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent || !strings.HasPrefix(resp.Header.Get("Content-Range"), fmt.Sprintf("bytes %d-", have)) {
		if err := out.Truncate(0); err != nil {
			return err
		}
		have = 0
	}
	if _, err := out.Seek(have, io.SeekStart); err != nil {
		return err
	}
	var w io.Writer = out
	if c.Progress != nil && want >= progressMin {
		p := newProgress(c.Progress, name, want, have, c.Now)
		defer p.finish()
		w = io.MultiWriter(out, p)
	}
	// Read one byte past the expected size so an over-long body is caught.
	n, err := io.Copy(w, io.LimitReader(resp.Body, want-have+1))
	if err != nil {
		return fmt.Errorf("after %d bytes: %w", have+n, err)
	}
	if have+n < want {
		return fmt.Errorf("after %d bytes: %w", have+n, io.ErrUnexpectedEOF)
	}
	return out.Sync()
}

// verify checks a downloaded file against its listing: size, then sha256
// for LFS files or the git blob sha1 for small files kept in git.
func verify(p string, f File) error {
	in, err := os.Open(p)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	if st.Size() != f.ContentSize() {
		return fmt.Errorf("size %d, listing says %d", st.Size(), f.ContentSize())
	}
	var h hash.Hash
	want, what := f.SHA256(), "sha256"
	if want == "" {
		if !runfile.IsCommit(f.OID) { // a git blob id has the same 40-hex form
			return fmt.Errorf("listing gives no hash to check")
		}
		h, want, what = sha1.New(), f.OID, "git blob id"
		fmt.Fprintf(h, "blob %d\x00", st.Size())
	} else {
		h = sha256.New()
	}
	if _, err := io.Copy(h, in); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != strings.ToLower(want) {
		return fmt.Errorf("%s mismatch: got %s, want %s (corrupt download, removed)", what, got, want)
	}
	return nil
}
