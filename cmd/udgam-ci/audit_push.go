package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/udgamlabs/udgam-ci/evals/audit"
)

// runAuditPush is `udgam-ci audit push`: audit reports to a report
// server, which shows each on the pages of its commit's runs.
func runAuditPush(e *env, args []string) error {
	fs := newFlags(e, "audit push AUDIT.json...",
		"upload artifact audit reports (audit artifact --json) to a report server; each is shown on the pages of the runs of its model at its commit; prints each audit's URL",
		"udgam-ci audit push audit.json --server https://evals.example.org --token $UDGAM_SERVER_TOKEN")
	var o uploadFlags
	o.add(fs, e, "audit")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := o.check(e, pos, "audit reports"); err != nil {
		return err
	}
	// Every report is checked here first, so a bad one is named before
	// anything is sent.
	bodies := make([][]byte, len(pos))
	for i, path := range pos {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if _, err := audit.Decode(bytes.NewReader(b), path); err != nil {
			return err
		}
		bodies[i] = b
	}
	c := o.client()
	enc := json.NewEncoder(e.Stdout)
	for i, path := range pos {
		res, err := c.UploadAudit(e.Ctx, bytes.NewReader(bodies[i]))
		if err != nil {
			return fmt.Errorf("audit push %s: %w", path, err)
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
		fmt.Fprintf(e.Stdout, "%s: %s %s (%s) %s\n", path, state, res.ID, res.Verdict, res.URL)
	}
	return nil
}
