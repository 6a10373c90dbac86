package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server/client"
)

// pushOptions are the inputs of `udgam-ci push`.
type pushOptions struct {
	Files    []string
	Baseline string
	BaseRef  string
	uploadFlags
}

func runPush(e *env, args []string) error {
	o, err := parsePush(e, args)
	if err != nil {
		return err
	}
	return push(e, o)
}

func parsePush(e *env, args []string) (pushOptions, error) {
	fs := newFlags(e, "push RUN.jsonl...",
		"upload run files to a report server; prints each run's URL and any settings that differ from its baseline",
		"udgam-ci push fresh.jsonl probes.jsonl --server https://evals.example.org --token $UDGAM_SERVER_TOKEN")
	var o pushOptions
	o.uploadFlags.add(fs, e, "run")
	fs.StringVar(&o.Baseline, "baseline", "", "run id to check settings against (default: the newest run on the base ref)")
	fs.StringVar(&o.BaseRef, "base-ref", "", "ref whose newest run is the baseline (default: the server's, main)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return o, err
	}
	if err := o.uploadFlags.check(e, pos, "run files"); err != nil {
		return o, err
	}
	o.Files = pos
	return o, nil
}

// uploadFlags are what every upload to a report server takes (push, audit
// push): the server, the token, --json and a timeout.
type uploadFlags struct {
	Server  string
	Token   string
	JSON    bool
	Timeout time.Duration
}

func (u *uploadFlags) add(fs *flag.FlagSet, e *env, what string) {
	fs.StringVar(&u.Server, "server", e.Getenv("UDGAM_SERVER_URL"), "report server URL (default $UDGAM_SERVER_URL)")
	fs.StringVar(&u.Token, "token", "", "upload token (default $UDGAM_SERVER_TOKEN)")
	fs.BoolVar(&u.JSON, "json", false, "print one JSON object per uploaded "+what)
	fs.DurationVar(&u.Timeout, "timeout", 2*time.Minute, "timeout of each upload")
}

// check fills the token from the environment and refuses what is missing.
func (u *uploadFlags) check(e *env, pos []string, files string) error {
	if u.Token == "" {
		u.Token = e.Getenv("UDGAM_SERVER_TOKEN")
	}
	switch {
	case len(pos) == 0:
		return usageError{errors.New("want one or more " + files)}
	case u.Server == "":
		return usageError{errors.New("--server URL is required")}
	case u.Token == "":
		return usageError{errors.New("--token is required (or set UDGAM_SERVER_TOKEN)")}
	}
	return nil
}

func (u *uploadFlags) client() *client.Client {
	return &client.Client{BaseURL: u.Server, Token: u.Token, HTTP: &http.Client{Timeout: u.Timeout}}
}

// push checks every file locally first, so a bad file is named with its
// line before anything is sent, then uploads them in order.
func push(e *env, o pushOptions) error {
	check := func(b []byte, path string) error {
		_, err := runfile.Read(bytes.NewReader(b), path)
		return err
	}
	return o.uploadAll(e, o.Files, "push", check, func(c *client.Client, _ string, body []byte) (uploaded, error) {
		res, err := c.UploadWith(e.Ctx, bytes.NewReader(body), client.UploadOptions{Baseline: o.Baseline, BaseRef: o.BaseRef})
		up := uploaded{answer: res, created: res.Created, line: res.ID + " " + res.URL}
		if len(res.Flags) > 0 {
			up.line += fmt.Sprintf("\n  warning: settings differ from baseline %s: %s", res.BaselineID, runfile.FormatDiffs(res.Flags))
		}
		return up, err
	})
}

// uploaded is one upload's answer as push and audit push print it: the
// whole answer with --json, else a line after the file's name.
type uploaded struct {
	answer  any
	created bool
	line    string
}

// uploadAll reads and checks every file first, so a bad one is named
// before anything is sent, then uploads each in order and prints its
// answer; verb names the command in errors.
func (u *uploadFlags) uploadAll(e *env, files []string, verb string, check func(body []byte, path string) error,
	send func(c *client.Client, path string, body []byte) (uploaded, error)) error {
	bodies := make([][]byte, len(files))
	for i, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := check(b, path); err != nil {
			return err
		}
		bodies[i] = b
	}
	c := u.client()
	enc := json.NewEncoder(e.Stdout)
	for i, path := range files {
		up, err := send(c, path, bodies[i])
		if err != nil {
			return fmt.Errorf("%s %s: %w", verb, path, err)
		}
		if u.JSON {
			if err := enc.Encode(up.answer); err != nil {
				return err
			}
			continue
		}
		state := "stored"
		if !up.created {
			state = "already stored"
		}
		if _, err := fmt.Fprintf(e.Stdout, "%s: %s %s\n", path, state, up.line); err != nil {
			return err
		}
	}
	return nil
}
