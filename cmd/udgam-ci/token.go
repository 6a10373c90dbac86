package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/udgamlabs/udgam-ci/server/store"
)

// tokenOptions are the inputs of `udgam-ci server token create|list|revoke`.
type tokenOptions struct {
	DB   string
	Repo string // create
	ID   int64  // revoke
	JSON bool   // list
}

func runTokenCreate(e *env, args []string) error {
	fs := newFlags(e, "server token create",
		"create an upload token for one repository; the token is printed once and only its hash is stored",
		"udgam-ci server token create --db runs.db --repo udgamlabs/smol-train")
	var o tokenOptions
	fs.StringVar(&o.DB, "db", "runs.db", "SQLite database file of the server")
	fs.StringVar(&o.Repo, "repo", "", "repository (OWNER/NAME) whose runs the token may upload")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if o.Repo == "" {
		return usageError{fmt.Errorf("--repo OWNER/NAME is required")}
	}
	return tokenCreate(e, o)
}

func tokenCreate(e *env, o tokenOptions) error {
	return withStore(e, o.DB, func(st *store.Store) error {
		secret, t, err := st.CreateToken(e.Ctx, o.Repo)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.Stderr, "token %d for %s (shown once; keep it as a secret, e.g. UDGAM_SERVER_TOKEN):\n", t.ID, t.Repo)
		fmt.Fprintln(e.Stdout, secret)
		return nil
	})
}

func runTokenList(e *env, args []string) error {
	fs := newFlags(e, "server token list", "list upload tokens (never their secrets), revoked ones included",
		"udgam-ci server token list --db runs.db")
	var o tokenOptions
	fs.StringVar(&o.DB, "db", "runs.db", "SQLite database file of the server")
	fs.BoolVar(&o.JSON, "json", false, "print JSON")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	return tokenList(e, o)
}

func tokenList(e *env, o tokenOptions) error {
	var ts []store.Token
	err := withStore(e, o.DB, func(st *store.Store) error {
		var err error
		ts, err = st.ListTokens(e.Ctx)
		return err
	})
	if err != nil {
		return err
	}
	if o.JSON {
		if ts == nil {
			ts = []store.Token{}
		}
		enc := json.NewEncoder(e.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(ts)
	}
	w := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tREPO\tPREFIX\tCREATED\tREVOKED")
	for _, t := range ts {
		revoked := "-"
		if t.RevokedAt != nil {
			revoked = t.RevokedAt.Format("2006-01-02 15:04")
		}
		fmt.Fprintf(w, "%d\t%s\t%s…\t%s\t%s\n", t.ID, t.Repo, t.Prefix, t.CreatedAt.Format("2006-01-02 15:04"), revoked)
	}
	return w.Flush()
}

func runTokenRevoke(e *env, args []string) error {
	fs := newFlags(e, "server token revoke ID", "revoke an upload token by its id (see token list); it stops working at once",
		"udgam-ci server token revoke --db runs.db 3")
	var o tokenOptions
	fs.StringVar(&o.DB, "db", "runs.db", "SQLite database file of the server")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{fmt.Errorf("want one token id; got %s", arguments(len(pos)))}
	}
	if o.ID, err = strconv.ParseInt(pos[0], 10, 64); err != nil || o.ID <= 0 {
		return usageError{fmt.Errorf("token id %q: want a positive number from token list", pos[0])}
	}
	return tokenRevoke(e, o)
}

func tokenRevoke(e *env, o tokenOptions) error {
	if err := withStore(e, o.DB, func(st *store.Store) error { return st.RevokeToken(e.Ctx, o.ID) }); err != nil {
		return err
	}
	fmt.Fprintf(e.Stderr, "token %d revoked\n", o.ID)
	return nil
}

// parseNoArgs parses flags and refuses positional arguments.
func parseNoArgs(fs *flag.FlagSet, args []string) error {
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", pos)}
	}
	return nil
}

// withStore opens the server's database for one command.
func withStore(e *env, db string, fn func(*store.Store) error) error {
	st, err := store.Open(e.Ctx, db, store.Options{Now: e.Now})
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(st)
}
