package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/server/client"
)

// runAuditPush is `udgam-ci audit push`: audit reports, each with the
// four run files it was judged from, to a report server, which recomputes
// them and shows each on the pages of its commit's runs.
func runAuditPush(e *env, args []string) error {
	fs := newFlags(e, "audit push AUDIT.json...",
		"upload artifact audit reports (audit artifact --json) with the run files they were judged from (audit artifact --out-dir) to a report server, which recomputes every figure; each is shown on the pages of the runs of its model at its commit; prints each audit's URL",
		"udgam-ci audit artifact --out-dir audit --json > audit/audit.json && udgam-ci audit push audit/audit.json --server https://evals.example.org --token $UDGAM_SERVER_TOKEN")
	var o uploadFlags
	o.add(fs, e, "audit")
	var runsDir string
	fs.StringVar(&runsDir, "runs", "", "folder holding each report's four run files (audit artifact --out-dir); default: the report's own folder")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := o.check(e, pos, "audit reports"); err != nil {
		return err
	}
	runs := map[string]map[string][]byte{}
	check := func(b []byte, path string) error {
		rep, err := audit.Decode(bytes.NewReader(b), path)
		if err != nil {
			return err
		}
		dir := runsDir
		if dir == "" {
			dir = filepath.Dir(path)
		}
		files, err := audit.ReadRunFiles(dir)
		if err != nil {
			return fmt.Errorf("audit report %s: %w (keep them with audit artifact --out-dir, or name their folder with --runs)", path, err)
		}
		// Checked here as the server checks it, so an edited report is
		// named before anything is sent.
		if _, err := audit.Rejudge(rep, files, rep.Limits); err != nil {
			return fmt.Errorf("audit report %s: %w", path, err)
		}
		raw := map[string][]byte{}
		for _, name := range audit.RunFileNames {
			if raw[name], err = os.ReadFile(filepath.Join(dir, name)); err != nil {
				return err
			}
		}
		runs[path] = raw
		return nil
	}
	return o.uploadAll(e, pos, "audit push", check, func(c *client.Client, path string, body []byte) (uploaded, error) {
		res, err := c.UploadAudit(e.Ctx, client.AuditUpload{Report: body, Runs: runs[path]})
		return uploaded{answer: res, created: res.Created, line: res.ID + " (" + res.Verdict + ") " + res.URL}, err
	})
}
