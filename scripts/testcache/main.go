// Command testcache runs test binaries built by go test -c through an
// emulator (make arm64-test: qemu-user) and remembers each pass, as go
// test's own cache does for tests it runs itself (issue 53). go test
// caches nothing run through -exec, so every arm64-test ran the emulated
// tests again, minutes of CPU, on inputs that had not changed.
//
// A pass is kept under two hashes, as go test keeps it: the first of the
// binary's bytes, its arguments and the emulator command (the emulator's
// own bytes included), which finds the list of environment variables and
// files the test consulted last time (its -test.testlogfile); the second
// of that list's values now: each variable's value, each file's bytes,
// each directory's names, each missing path as missing. A later run with
// the same first hash and the same values prints the kept output, marked
// cached; anything else runs the test. Unlike go test, a file is hashed
// by its bytes, not its modification time, so a fresh clone finds its
// passes. Files read only by a process the test starts are not in its log,
// as with go test: their binary is the test binary, hashed.
//
//	testcache -cache DIR [-exec CMD] [-p N] DIR=BINARY[,ARG...] ...
//
// Each DIR=BINARY runs BINARY in DIR (its package's folder) with the ARGs,
// -test.* flags joined by commas; an empty -cache runs every test.
package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

func main() {
	cache := flag.String("cache", "", "folder for kept passes (empty: run every test, keep none)")
	execCmd := flag.String("exec", "", "command, split at spaces, put before each binary (the emulator)")
	parallel := flag.Int("p", runtime.NumCPU(), "binaries run at once")
	flag.Parse()
	if flag.NArg() == 0 || *parallel < 1 {
		fmt.Fprintln(os.Stderr, "usage: testcache -cache DIR [-exec CMD] [-p N] DIR=BINARY[,ARG...] ...")
		os.Exit(2)
	}
	var runs []run
	for _, a := range flag.Args() {
		r, err := parseRun(a)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testcache:", err)
			os.Exit(2)
		}
		runs = append(runs, r)
	}
	c := cacheDir(*cache)
	results := make([]result, len(runs))
	sem := make(chan struct{}, *parallel)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i] = c.test(runs[i], strings.Fields(*execCmd), os.Environ())
		}()
	}
	wg.Wait()
	failed := 0
	for i, r := range results {
		os.Stdout.Write(r.out)
		switch {
		case r.err != nil:
			failed++
			fmt.Printf("FAIL\t%s\t%s\n", runs[i].dir, r.err)
		case r.cached:
			fmt.Printf("ok  \t%s\t(cached)\n", runs[i].dir)
		default:
			fmt.Printf("ok  \t%s\t%.1fs\n", runs[i].dir, r.took.Seconds())
		}
		if r.warning != "" {
			fmt.Fprintf(os.Stderr, "testcache: %s: %s\n", runs[i].dir, r.warning)
		}
	}
	if failed > 0 {
		os.Exit(1)
	}
}

// run is one test binary: where it runs and with what.
type run struct {
	dir, bin string
	args     []string
}

func parseRun(s string) (run, error) {
	dir, rest, ok := strings.Cut(s, "=")
	if !ok || dir == "" || rest == "" {
		return run{}, fmt.Errorf("%q: want DIR=BINARY[,ARG...]", s)
	}
	parts := strings.Split(rest, ",")
	bin, err := filepath.Abs(parts[0])
	if err != nil {
		return run{}, fmt.Errorf("%q: %w", s, err)
	}
	for _, a := range parts[1:] {
		if !strings.HasPrefix(a, "-test.") {
			return run{}, fmt.Errorf("%q: argument %q is not a -test. flag", s, a)
		}
	}
	return run{dir: dir, bin: bin, args: parts[1:]}, nil
}

type result struct {
	out     []byte
	cached  bool
	took    time.Duration
	err     error
	warning string // a pass that could not be kept
}

// cacheDir keeps passes: DIR/ID.log is the test log of the binary's last
// pass (ID: binaryID), DIR/ID-INPUTS.out the output of a pass with those
// inputs (INPUTS: inputsID of that log now). Empty: nothing is kept.
type cacheDir string

// test runs r, or prints its kept pass; env is the test's environment.
func (c cacheDir) test(r run, execCmd, env []string) result {
	var id string
	if c != "" {
		var err error
		if id, err = binaryID(r, execCmd); err != nil {
			return result{err: err}
		}
		if out, ok := c.lookup(r.dir, id, env); ok {
			return result{out: out, cached: true}
		}
	}
	logFile, err := os.CreateTemp("", "testcache-*.log")
	if err != nil {
		return result{err: fmt.Errorf("test log: %w", err)}
	}
	logFile.Close()
	defer os.Remove(logFile.Name())
	argv := append(append(append([]string{}, execCmd...), r.bin, "-test.testlogfile="+logFile.Name(), "-test.paniconexit0"), r.args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = r.dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	res := result{out: out.Bytes(), took: time.Since(start)}
	if err != nil {
		res.err = fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
		return res
	}
	if c != "" {
		if err := c.keep(r.dir, id, logFile.Name(), res.out, env); err != nil {
			res.warning = "pass not kept: " + err.Error()
		}
	}
	return res
}

func (c cacheDir) lookup(dir, id string, env []string) ([]byte, bool) {
	log, err := os.ReadFile(filepath.Join(string(c), id+".log"))
	if err != nil {
		return nil, false
	}
	inputs, err := inputsID(dir, log, env)
	if err != nil {
		return nil, false
	}
	out, err := os.ReadFile(filepath.Join(string(c), id+"-"+inputs+".out"))
	return out, err == nil
}

func (c cacheDir) keep(dir, id, logPath string, out []byte, env []string) error {
	log, err := os.ReadFile(logPath)
	if err != nil {
		return err
	}
	inputs, err := inputsID(dir, log, env)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(string(c), 0o755); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(string(c), id+".log"), log); err != nil {
		return err
	}
	return writeFile(filepath.Join(string(c), id+"-"+inputs+".out"), out)
}

// writeFile writes through a temporary name, so that a reader never sees
// half a file.
func writeFile(name string, data []byte) error {
	tmp := fmt.Sprintf("%s.%d.tmp", name, os.Getpid())
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

// binaryID hashes what decides a test's run before its inputs: the
// binary, its arguments, the emulator command and the emulator's bytes.
func binaryID(r run, execCmd []string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "testcache 1\nargs %q\nexec %q\n", r.args, execCmd)
	files := []string{r.bin}
	if len(execCmd) > 0 {
		emu, err := exec.LookPath(execCmd[0])
		if err != nil {
			return "", fmt.Errorf("the emulator: %w", err)
		}
		files = append(files, emu)
	}
	for _, f := range files {
		if err := hashFile(h, f); err != nil {
			return "", fmt.Errorf("hashing %s: %w", f, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}

func hashFile(h io.Writer, name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(h, f)
	return err
}

// inputsID hashes the values now of what a test log (testing's
// -test.testlogfile: getenv, open, stat and chdir lines, paths relative
// to the package's folder at first) says the test consulted; env is the
// test's environment.
func inputsID(dir string, log []byte, env []string) (string, error) {
	vars := map[string]string{}
	for _, kv := range env {
		// The last of a name wins, as os/exec passes it.
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	h := sha256.New()
	pwd, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	tmp := filepath.Clean(vars["TMPDIR"])
	if vars["TMPDIR"] == "" {
		tmp = "/tmp"
	}
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for first := true; sc.Scan(); first = false {
		line := sc.Text()
		if first {
			if line != "# test log" {
				return "", fmt.Errorf("not a test log: %q", line)
			}
			continue
		}
		op, name, ok := strings.Cut(line, " ")
		if !ok || seen[line] && op != "chdir" {
			continue
		}
		seen[line] = true
		switch op {
		case "getenv":
			v, set := vars[name]
			fmt.Fprintf(h, "env %s %t %q\n", name, set, v)
		case "chdir":
			pwd = abs(pwd, name)
		case "open", "stat":
			p := abs(pwd, name)
			fmt.Fprintf(h, "%s %s\n", op, p)
			if p == tmp {
				// The temporary folder itself, opened to make t.TempDir's
				// folders in: its names are the machine's, not the test's
				// input (a pass would never be found again).
				continue
			}
			if err := hashPath(h, p); err != nil {
				return "", err
			}
		default:
			return "", fmt.Errorf("test log: unknown line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}

func abs(pwd, name string) string {
	if filepath.IsAbs(name) {
		return filepath.Clean(name)
	}
	return filepath.Join(pwd, name)
}

// hashPath writes a path's state: missing, a directory's sorted names, or
// a file's bytes.
func hashPath(h io.Writer, p string) error {
	info, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintln(h, "missing")
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case info.IsDir():
		entries, err := os.ReadDir(p)
		if err != nil {
			return err
		}
		names := make([]string, len(entries))
		for i, e := range entries {
			names[i] = e.Name()
		}
		sort.Strings(names)
		fmt.Fprintf(h, "dir %q\n", names)
	case info.Mode().IsRegular():
		fmt.Fprintf(h, "file %d\n", info.Size())
		return hashFile(h, p)
	default:
		fmt.Fprintf(h, "mode %s\n", info.Mode().Type())
	}
	return nil
}
