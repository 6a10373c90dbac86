// Command loadgen uploads synthetic runs to a report server from several
// clients at once and prints the sustained upload rate and latencies. Run
// it as its own process against `udgam-ci serve`:
//
//	udgam-ci serve --db /tmp/load.db &
//	T=$(udgam-ci server token create --db /tmp/load.db --repo udgamlabs/smol-train)
//	go run ./server/cmd/loadgen --server http://127.0.0.1:8080 --token $T --clients 8 --duration 10s
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/udgamlabs/udgam-ci/server/client"
	"github.com/udgamlabs/udgam-ci/server/servertest"
)

type options struct {
	Server   string
	Token    string
	Clients  int
	Duration time.Duration
	Records  int
	Test     string
}

func main() {
	var o options
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.StringVar(&o.Server, "server", "http://127.0.0.1:8080", "report server URL")
	fs.StringVar(&o.Token, "token", os.Getenv("UDGAM_SERVER_TOKEN"), "upload token for udgamlabs/smol-train")
	fs.IntVar(&o.Clients, "clients", 8, "concurrent clients")
	fs.DurationVar(&o.Duration, "duration", 10*time.Second, "how long to upload")
	fs.IntVar(&o.Records, "records", 2000, "records per run")
	fs.StringVar(&o.Test, "test", "probes", "fresh or probes")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if err := run(context.Background(), o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, out io.Writer) error {
	if o.Clients < 1 || o.Records < 1 {
		return fmt.Errorf("--clients and --records must be positive")
	}
	// Bodies are made before the clock starts, so only uploads are timed.
	prefix := time.Now().UTC().Format("20060102T150405")
	bodies := make([][]byte, 32)
	for i := range bodies {
		bodies[i] = servertest.Spec{Seed: uint64(i), Records: o.Records, Test: o.Test}.Body()
	}
	hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: o.Clients}}
	ctx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for w := range o.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &client.Client{BaseURL: o.Server, Token: o.Token, HTTP: hc}
			for i := 0; ; i++ {
				old := []byte(`"id":"` + o.Test + "-")
				id := []byte(fmt.Sprintf(`"id":"load-%s-%d-%d-`, prefix, w, i))
				body := bytes.Replace(bodies[(w*7+i)%len(bodies)], old, id, 1)
				t0 := time.Now()
				_, err := c.Upload(context.WithoutCancel(ctx), bytes.NewReader(body))
				if ctx.Err() != nil {
					return // the upload that crosses the deadline is not counted
				}
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if err == nil {
					lat = append(lat, time.Since(t0))
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return firstErr
	}
	if len(lat) == 0 {
		return fmt.Errorf("no upload finished in %s", o.Duration)
	}
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
	fmt.Fprintf(out, "%d uploads of %d-record %s runs by %d clients in %s: %.1f uploads/s; latency p50 %s, p90 %s, p99 %s\n",
		len(lat), o.Records, o.Test, o.Clients, elapsed.Round(time.Millisecond), float64(len(lat))/elapsed.Seconds(),
		q(0.5).Round(time.Millisecond), q(0.9).Round(time.Millisecond), q(0.99).Round(time.Millisecond))
	return nil
}
