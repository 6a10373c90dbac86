package main

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"

	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// serveOptions are the inputs of `udgam-ci serve`.
type serveOptions struct {
	DB         string
	Addr       string
	Private    bool
	MaxBody    int64
	BaseRef    string
	PublicURL  string
	TrustProxy bool
	LogText    bool
	// AuditLimits are what this server judges artifact audits under.
	AuditLimits audit.Limits
	// WebhookURL receives the server's events, signed with the secret read
	// from WebhookSecretFile or $UDGAM_WEBHOOK_SECRET.
	WebhookURL, WebhookSecretFile string
	WebhookSecret                 []byte
}

func runServe(e *env, args []string) error {
	o, err := parseServe(e, args)
	if err != nil {
		return err
	}
	return serve(e, o)
}

func parseServe(e *env, args []string) (serveOptions, error) {
	fs := newFlags(e, "serve",
		"run the report server: stores uploaded runs in SQLite, flags settings that differ from the baseline, serves the API and history pages; stops cleanly on SIGTERM",
		"udgam-ci serve --db runs.db --addr 127.0.0.1:8080")
	var o serveOptions
	fs.StringVar(&o.DB, "db", "runs.db", "SQLite database file (created and migrated if needed)")
	fs.StringVar(&o.Addr, "addr", "127.0.0.1:8080", "address to listen on")
	fs.BoolVar(&o.Private, "private", false, "pages and GET APIs need a token too (browsers: any user name, the token as password)")
	fs.Int64Var(&o.MaxBody, "max-body", server.DefaultMaxBody, "largest upload in bytes, before and after gunzip")
	fs.StringVar(&o.BaseRef, "base-ref", runfile.DefaultBaseRef, "branch whose newest run is each upload's baseline")
	fs.StringVar(&o.PublicURL, "public-url", "", "URL the server is reached at, for links in upload answers (default: paths, which push and the Action resolve)")
	fs.BoolVar(&o.TrustProxy, "trust-proxy", false, "log the client address from X-Forwarded-For (behind a reverse proxy on a private network)")
	fs.BoolVar(&o.LogText, "log-text", false, "log as text instead of JSON")
	limits := fs.String("audit-max-degradation", audit.DefaultLimits.String(), "limits this server judges uploaded artifact audits under (an uploader's own are shown as their claim)")
	fs.StringVar(&o.WebhookURL, "webhook-url", "", "post a signed JSON event here when a base-branch run regresses or an artifact audit fails")
	fs.StringVar(&o.WebhookSecretFile, "webhook-secret-file", "", "file holding the webhook's HMAC secret (default: $UDGAM_WEBHOOK_SECRET)")
	if err := parseNoArgs(fs, args); err != nil {
		return o, err
	}
	var err error
	if o.AuditLimits, err = audit.ParseLimits(*limits); err != nil {
		return o, usageError{fmt.Errorf("--audit-max-degradation: %w", err)}
	}
	if o.WebhookSecret, err = webhookSecret(e, o.WebhookSecretFile); err != nil {
		return o, err
	}
	if o.WebhookURL != "" && len(o.WebhookSecret) == 0 {
		return o, usageError{errors.New("--webhook-url needs a secret: --webhook-secret-file or UDGAM_WEBHOOK_SECRET")}
	}
	if o.MaxBody <= 0 {
		return o, usageError{fmt.Errorf("--max-body %d: want a positive number of bytes", o.MaxBody)}
	}
	return o, nil
}

func serve(e *env, o serveOptions) error {
	var h slog.Handler = slog.NewJSONHandler(e.Stderr, nil)
	if o.LogText {
		h = slog.NewTextHandler(e.Stderr, nil)
	}
	st, err := store.Open(e.Ctx, o.DB, store.Options{Now: e.Now})
	if err != nil {
		return err
	}
	defer st.Close()
	srv, err := server.New(server.Config{
		Store: st, Logger: slog.New(h), MaxBody: o.MaxBody, Private: o.Private, BaseRef: o.BaseRef, PublicURL: o.PublicURL,
		TrustProxy: o.TrustProxy, AuditLimits: &o.AuditLimits, Webhook: server.Webhook{URL: o.WebhookURL, Secret: o.WebhookSecret},
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.Addr, err)
	}
	return srv.Serve(e.Ctx, ln)
}

// webhookSecret reads the secret from path, or else from
// $UDGAM_WEBHOOK_SECRET; surrounding whitespace (a file's newline) is not
// part of it.
func webhookSecret(e *env, path string) ([]byte, error) {
	if path == "" {
		return []byte(strings.TrimSpace(e.Getenv("UDGAM_WEBHOOK_SECRET"))), nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--webhook-secret-file: %w", err)
	}
	return bytes.TrimSpace(b), nil
}
