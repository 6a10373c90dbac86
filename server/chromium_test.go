package server_test

import (
	"bytes"
	"context"
	"flag"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

var updateScreenshot = flag.Bool("update-screenshot", false, "write docs/history.png from the seeded history page")

// chromium finds Debian's chromium. Without it the test is skipped, except
// under CI (CI set), where a missing browser is a failure.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed (apt-get install -y chromium); CI is set, so this fails instead of skipping")
	}
	t.Skip("chromium is not installed (apt-get install -y chromium)")
	return ""
}

// runChromium runs headless chromium with the flags that keep it offline
// and quiet, and returns its stdout.
func runChromium(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--hide-scrollbars", "--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
	}
	return out.Bytes()
}

func seedHistory(t *testing.T, ts *testServer, revisions int) {
	t.Helper()
	for _, sp := range servertest.History(model, revisions, 150) {
		if code, _, body := ts.upload(sp.Body(), ""); code != 201 {
			t.Fatalf("seed %s: %d %s", sp.ID, code, body)
		}
	}
}

func TestChromiumHistoryPage(t *testing.T) {
	bin := chromium(t)
	ts := startServer(t, server.Config{})
	const revisions = 40
	seedHistory(t, ts, revisions)
	url := ts.url + "/models/" + model

	dom := string(runChromium(t, bin, "--dump-dom", url))
	charts := regexp.MustCompile(`<svg class="chart"`).FindAllStringIndex(dom, -1)
	if len(charts) != 2 {
		t.Fatalf("%d charts in the DOM, want 2 (bpb and accuracy)", len(charts))
	}
	for _, id := range []string{`id="runs-fresh"`, `id="runs-probes"`} {
		if !strings.Contains(dom, id) {
			t.Fatalf("table %s missing from the DOM", id)
		}
	}
	// Every run is a row and a point; the flagged revision is marked.
	if rows := strings.Count(dom, `<tr>`); rows < 2*revisions {
		t.Fatalf("%d table rows, want at least %d", rows, 2*revisions)
	}
	if strings.Count(dom, `class="flag"`) < 2 {
		t.Fatal("the flagged runs are not marked")
	}
	for _, want := range []string{"bits per byte (lower is better)", "probe accuracy", "base branch", "95% interval"} {
		if !strings.Contains(dom, want) {
			t.Fatalf("the page lacks %q", want)
		}
	}

	dir := t.TempDir()
	for _, shot := range []struct{ name, size string }{{"history.png", "1280,1600"}, {"history-phone.png", "390,1400"}} {
		path := filepath.Join(dir, shot.name)
		runChromium(t, bin, "--screenshot="+path, "--window-size="+shot.size, url)
		f, err := os.Open(path)
		if err != nil {
			t.Fatalf("no screenshot: %v", err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("screenshot %s: %v", shot.name, err)
		}
		if b := img.Bounds(); b.Dx() < 300 || b.Dy() < 1000 {
			t.Fatalf("screenshot %s is %v", shot.name, b)
		}
		if keep := os.Getenv("UDGAM_SCREENSHOT_DIR"); keep != "" {
			copyFile(t, path, filepath.Join(keep, shot.name))
		}
	}
	// For a person to look at: the other pages, when asked.
	if keep := os.Getenv("UDGAM_SCREENSHOT_DIR"); keep != "" {
		for name, path := range map[string]string{"index.png": "/", "run.png": "/runs/probes-0020", "compare.png": "/compare?base=probes-0018&head=probes-0019"} {
			runChromium(t, bin, "--screenshot="+filepath.Join(keep, name), "--window-size=1280,1400", ts.url+path)
		}
	}
	if *updateScreenshot {
		copyFile(t, filepath.Join(dir, "history.png"), filepath.Join("..", "docs", "history.png"))
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
