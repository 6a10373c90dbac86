package main

import (
	"bytes"
	"encoding/json"
	"errors"
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
	Server   string
	Token    string
	Baseline string
	BaseRef  string
	JSON     bool
	Timeout  time.Duration
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
	fs.StringVar(&o.Server, "server", e.Getenv("UDGAM_SERVER_URL"), "report server URL (default $UDGAM_SERVER_URL)")
	fs.StringVar(&o.Token, "token", "", "upload token (default $UDGAM_SERVER_TOKEN)")
	fs.StringVar(&o.Baseline, "baseline", "", "run id to check settings against (default: the newest run on the base ref)")
	fs.StringVar(&o.BaseRef, "base-ref", "", "ref whose newest run is the baseline (default: the server's, main)")
	fs.BoolVar(&o.JSON, "json", false, "print one JSON object per uploaded run")
	fs.DurationVar(&o.Timeout, "timeout", 2*time.Minute, "timeout of each upload")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return o, err
	}
	if o.Token == "" {
		o.Token = e.Getenv("UDGAM_SERVER_TOKEN")
	}
	switch {
	case len(pos) == 0:
		return o, usageError{errors.New("want one or more run files")}
	case o.Server == "":
		return o, usageError{errors.New("--server URL is required")}
	case o.Token == "":
		return o, usageError{errors.New("--token is required (or set UDGAM_SERVER_TOKEN)")}
	}
	o.Files = pos
	return o, nil
}

// push checks every file locally first, so a bad file is named with its
// line before anything is sent, then uploads them in order.
func push(e *env, o pushOptions) error {
	bodies := make([][]byte, len(o.Files))
	for i, path := range o.Files {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if _, err := runfile.Read(bytes.NewReader(b), path); err != nil {
			return err
		}
		bodies[i] = b
	}
	c := &client.Client{BaseURL: o.Server, Token: o.Token, HTTP: &http.Client{Timeout: o.Timeout}}
	enc := json.NewEncoder(e.Stdout)
	for i, path := range o.Files {
		res, err := c.UploadWith(e.Ctx, bytes.NewReader(bodies[i]), client.UploadOptions{Baseline: o.Baseline, BaseRef: o.BaseRef})
		if err != nil {
			return fmt.Errorf("push %s: %w", path, err)
		}
		if o.JSON {
			if err := enc.Encode(res); err != nil {
				return err
			}
			continue
		}
		state := "stored"
		if !res.Created {
			state = "already stored"
		}
		fmt.Fprintf(e.Stdout, "%s: %s %s %s\n", path, state, res.ID, res.URL)
		if len(res.Flags) > 0 {
			fmt.Fprintf(e.Stdout, "  warning: settings differ from baseline %s: %s\n", res.BaselineID, runfile.FormatDiffs(res.Flags))
		}
	}
	return nil
}
