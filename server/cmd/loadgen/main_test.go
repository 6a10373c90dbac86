package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

func TestLoadgenUploadsAndReports(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	live := servertest.Start(t, server.Config{}, "udgamlabs/smol-train")
	var out bytes.Buffer
	err := run(ctx, options{Server: live.URL, Token: live.Tokens[0], Clients: 2, Duration: 400 * time.Millisecond, Records: 50, Test: "probes"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`^(\d+) uploads of 50-record probes runs by 2 clients`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("output %q", out.String())
	}
	n, _ := strconv.Atoi(m[1])
	runs, _, err := live.Store.Counts(ctx)
	if err != nil || n < 1 || runs < n {
		t.Fatalf("%d runs stored (%v); loadgen said %s", runs, err, out.String())
	}
	// A wrong token is an error, not a silent zero.
	if err := run(ctx, options{Server: live.URL, Token: "udgci_bad", Clients: 1, Duration: time.Second, Records: 5, Test: "probes"}, &out); err == nil {
		t.Fatal("uploads with a bad token reported success")
	}
}
