package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/server/servertest"
)

func serverTestEnv(ctx context.Context, vars map[string]string) (*env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &env{
		Ctx: ctx, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Getenv: func(k string) string { return vars[k] },
		Now:    time.Now,
		CPUs:   testCPUs,
	}, &out, &errb
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestServeTokenPushCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	bg := context.Background()

	e, out, _ := serverTestEnv(bg, nil)
	if code := run(e, []string{"server", "token", "create", "--db", db, "--repo", "udgamlabs/smol-train"}); code != 0 {
		t.Fatalf("token create: exit %d", code)
	}
	token := strings.TrimSpace(out.String())
	if !strings.HasPrefix(token, "udgci_") {
		t.Fatalf("token create printed %q", token)
	}
	e, _, _ = serverTestEnv(bg, nil)
	if code := run(e, []string{"server", "token", "create", "--db", db}); code != 2 {
		t.Fatalf("token create without --repo: exit %d, want 2", code)
	}

	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(bg)
	se, _, serr := serverTestEnv(ctx, nil)
	done := make(chan int, 1)
	go func() { done <- run(se, []string{"serve", "--db", db, "--addr", addr}) }()
	url := "http://" + addr
	for i := 0; ; i++ {
		resp, err := http.Get(url + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if i > 200 {
			t.Fatalf("server did not come up: %v\n%s", err, serr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	runPath := filepath.Join(dir, "probes.jsonl")
	if err := os.WriteFile(runPath, servertest.Spec{ID: "cmd-run", Seed: 1, Records: 30}.Body(), 0o644); err != nil {
		t.Fatal(err)
	}
	e, out, errb := serverTestEnv(bg, map[string]string{"UDGAM_SERVER_TOKEN": token})
	if code := run(e, []string{"push", runPath, "--server", url}); code != 0 {
		t.Fatalf("push: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "stored cmd-run "+url+"/runs/cmd-run") {
		t.Fatalf("push printed %q", out.String())
	}
	e, out, _ = serverTestEnv(bg, nil)
	if code := run(e, []string{"push", runPath, "--server", url, "--token", token}); code != 0 || !strings.Contains(out.String(), "already stored") {
		t.Fatalf("second push: exit %d, %q", code, out.String())
	}
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"schema\":\"udgam-ci.run/v1\"\n"), 0o644)
	e, _, errb = serverTestEnv(bg, nil)
	if code := run(e, []string{"push", bad, "--server", url, "--token", token}); code != 1 || !strings.Contains(errb.String(), "bad.jsonl line 1") {
		t.Fatalf("push of a bad file: exit %d, %q", code, errb.String())
	}

	e, out, _ = serverTestEnv(bg, nil)
	if code := run(e, []string{"server", "token", "list", "--db", db}); code != 0 || !strings.Contains(out.String(), "udgamlabs/smol-train") || strings.Contains(out.String(), token) {
		t.Fatalf("token list: exit %d, %q", code, out.String())
	}
	e, _, _ = serverTestEnv(bg, nil)
	if code := run(e, []string{"server", "token", "revoke", "--db", db, "1"}); code != 0 {
		t.Fatalf("token revoke: exit %d", code)
	}
	e, _, errb = serverTestEnv(bg, nil)
	if code := run(e, []string{"push", runPath, "--server", url, "--token", token}); code != 1 || !strings.Contains(errb.String(), "revoked") {
		t.Fatalf("push with a revoked token: exit %d, %q", code, errb.String())
	}
	e, _, _ = serverTestEnv(bg, nil)
	if code := run(e, []string{"server", "token", "revoke", "--db", db, "x"}); code != 2 {
		t.Fatalf("revoke x: exit %d, want 2", code)
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d: %s", code, serr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop when its context ended")
	}
	if !strings.Contains(serr.String(), `"msg":"request"`) {
		t.Fatalf("serve wrote no request log: %s", serr.String())
	}
}
