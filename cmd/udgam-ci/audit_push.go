package main

import (
	"bytes"

	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/server/client"
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
	check := func(b []byte, path string) error {
		_, err := audit.Decode(bytes.NewReader(b), path)
		return err
	}
	return o.uploadAll(e, pos, "audit push", check, func(c *client.Client, body []byte) (uploaded, error) {
		res, err := c.UploadAudit(e.Ctx, bytes.NewReader(body))
		return uploaded{answer: res, created: res.Created, line: res.ID + " (" + res.Verdict + ") " + res.URL}, err
	})
}
