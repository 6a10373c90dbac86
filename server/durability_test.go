package server_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/internal/testexec"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/client"
	"github.com/udgamlabs/udgam-ci/server/servertest"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// childEnv switches the test binary into a plain server process, so tests
// can kill a real server with SIGKILL and start it again.
const childEnv = "UDGAM_SERVER_TEST_CHILD_DB"

func TestMain(m *testing.M) {
	if db := os.Getenv(childEnv); db != "" {
		os.Exit(runChild(db))
	}
	os.Exit(m.Run())
}

func runChild(db string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	st, err := store.Open(ctx, db, store.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer st.Close()
	srv, err := server.New(server.Config{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("listening %s\n", ln.Addr())
	if err := srv.Serve(ctx, ln); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startChild runs the server in another process and returns its URL.
func startChild(t testing.TB, db string) (*exec.Cmd, string) {
	t.Helper()
	cmd := testexec.Self("-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+db)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child server did not start: %v", err)
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if !ok {
		t.Fatalf("child said %q", line)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, "http://" + addr
}

// newDB makes a database file with one token and returns both.
func newDB(t testing.TB) (string, string) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "runs.db")
	st, err := store.Open(context.Background(), db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	token, _, err := st.CreateToken(context.Background(), testRepo)
	if err != nil {
		t.Fatal(err)
	}
	return db, token
}

func TestConcurrentUploadsLandOnce(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{})
	const n = 50
	specs := make([]servertest.Spec, n)
	for i := range specs {
		specs[i] = servertest.Spec{ID: fmt.Sprintf("c-%02d", i), Seed: uint64(i), Records: 100}
	}
	// Every run is sent twice at once, so the same id races itself too.
	var wg sync.WaitGroup
	codes := make([][2]int, n)
	for i := range 2 * n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sp := specs[i%n]
			code, _, body := ts.upload(sp.Body(), "")
			if code/100 != 2 {
				t.Errorf("upload %s: %d %s", sp.ID, code, body)
			}
			codes[i%n][i/n] = code
		}()
	}
	wg.Wait()
	for i, c := range codes {
		if !(c == [2]int{201, 200} || c == [2]int{200, 201}) {
			t.Errorf("run %s answered %v, want one 201 and one 200", specs[i].ID, c)
		}
	}
	if s := ts.state(); !strings.HasPrefix(s, fmt.Sprintf("%d runs, %d records", n, n*100)) {
		t.Fatalf("state %s", s)
	}
	if err := ts.st.IntegrityCheck(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// slowBody sends the first part, then waits for a signal before the rest.
type slowBody struct {
	first, rest []byte
	sent        chan struct{}
	release     chan struct{}
	state       int
}

func (b *slowBody) Read(p []byte) (int, error) {
	switch b.state {
	case 0:
		b.state = 1
		n := copy(p, b.first)
		close(b.sent)
		return n, nil
	case 1:
		<-b.release
		b.state = 2
		return copy(p, b.rest), nil
	}
	return 0, io.EOF
}

func TestShutdownFinishesInFlightUpload(t *testing.T) {
	t.Parallel()
	ts := startServer(t, server.Config{})
	body := servertest.Spec{ID: "in-flight", Seed: 1, Records: 50}.Body()
	sb := &slowBody{first: body[:100], rest: body[100:], sent: make(chan struct{}), release: make(chan struct{})}
	type answer struct {
		code int
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, ts.url+"/api/v1/runs", sb)
		req.ContentLength = int64(len(body))
		req.Header.Set("Authorization", "Bearer "+ts.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- answer{err: err}
			return
		}
		resp.Body.Close()
		done <- answer{code: resp.StatusCode}
	}()
	<-sb.sent
	time.Sleep(50 * time.Millisecond) // let the server start reading
	ts.cancel()                       // shutdown begins with the upload half sent
	select {
	case err := <-ts.done:
		t.Fatalf("server stopped before the in-flight upload finished: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(sb.release)
	a := <-done
	if a.err != nil || a.code != http.StatusCreated {
		t.Fatalf("in-flight upload: %d %v", a.code, a.err)
	}
	err := <-ts.done
	ts.done <- err // for the cleanup's check
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.st.GetRun(context.Background(), "in-flight"); err != nil {
		t.Fatal(err)
	}
	// New connections are refused once it has stopped.
	if _, err := http.Get(ts.url + "/healthz"); err == nil {
		t.Fatal("server still answers after shutdown")
	}
}

func TestKill9DuringUploads(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts server processes")
	}
	db, token := newDB(t)
	cmd, url := startChild(t, db)
	hc := &http.Client{Timeout: 20 * time.Second}

	var mu sync.Mutex
	var ok []servertest.Spec
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &client.Client{BaseURL: url, Token: token, HTTP: hc}
			for i := 0; ctx.Err() == nil; i++ {
				sp := servertest.Spec{ID: fmt.Sprintf("k-%d-%d", w, i), Seed: uint64(w*1000 + i), Records: 400}
				if _, err := c.Upload(ctx, bytes.NewReader(sp.Body())); err != nil {
					return // the server died under us: expected
				}
				mu.Lock()
				ok = append(ok, sp)
				mu.Unlock()
			}
		}()
	}
	// Kill once a fair number landed, while others are in flight.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(ok)
		mu.Unlock()
		if n >= 30 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	cancel()
	wg.Wait()
	if len(ok) < 10 {
		t.Fatalf("only %d uploads succeeded before the kill", len(ok))
	}

	_, url = startChild(t, db)
	c := &client.Client{BaseURL: url, Token: token, HTTP: hc}
	for _, sp := range ok {
		got, err := c.RunFile(context.Background(), sp.ID)
		if err != nil {
			t.Fatalf("run %s was acknowledged before the kill but is gone: %v", sp.ID, err)
		}
		if !reflect.DeepEqual(got.Items, sp.Run().Items) {
			t.Fatalf("run %s is not whole after the restart", sp.ID)
		}
	}
	st, err := store.Open(context.Background(), db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.IntegrityCheck(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Every stored run, acknowledged or not, is whole: no half runs.
	runs, records, err := st.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if records != runs*400 || runs < len(ok) {
		t.Fatalf("%d runs with %d records after the kill; %d were acknowledged", runs, records, len(ok))
	}
	t.Logf("%d uploads acknowledged before SIGKILL, %d runs stored whole", len(ok), runs)
}

func TestSIGTERMFinishesInFlightUpload(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server process")
	}
	db, token := newDB(t)
	cmd, url := startChild(t, db)
	body := servertest.Spec{ID: "term", Seed: 1, Records: 50}.Body()
	sb := &slowBody{first: body[:100], rest: body[100:], sent: make(chan struct{}), release: make(chan struct{})}
	codec := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, url+"/api/v1/runs", sb)
		req.ContentLength = int64(len(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			codec <- 0
			return
		}
		resp.Body.Close()
		codec <- resp.StatusCode
	}()
	<-sb.sent
	time.Sleep(50 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	close(sb.release)
	if code := <-codec; code != http.StatusCreated {
		t.Fatalf("in-flight upload answered %d during SIGTERM", code)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("server did not exit cleanly on SIGTERM: %v", err)
	}
	st, err := store.Open(context.Background(), db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.GetRun(context.Background(), "term"); err != nil {
		t.Fatal(err)
	}
}
