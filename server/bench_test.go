package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/server"
	"github.com/udgamlabs/udgam-ci/server/client"
	"github.com/udgamlabs/udgam-ci/server/servertest"
	"github.com/udgamlabs/udgam-ci/server/store"
)

// BenchmarkHistoryPage renders /models/{model} over HTTP for a model with
// 1,000 runs (500 revisions, both tests). Target: under 200 ms.
func BenchmarkHistoryPage(b *testing.B) {
	ts := startServer(b, server.Config{})
	ctx := context.Background()
	for _, sp := range servertest.History(model, 500, 20) {
		if _, err := server.Ingest(ctx, ts.st, sp.Run(), store.PutOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	url := ts.url + "/models/" + model
	b.ResetTimer()
	var size int
	for b.Loop() {
		resp, err := http.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
		size = int(n)
	}
	b.ReportMetric(float64(size)/1024, "KiB/page")
}

// BenchmarkUpload2000Items stores a 2,000-item probe run over HTTP, each
// iteration a new run. Target: under 100 ms.
func BenchmarkUpload2000Items(b *testing.B) {
	ts := startServer(b, server.Config{})
	ctx := context.Background()
	i := 0
	for b.Loop() {
		b.StopTimer()
		body := servertest.Spec{ID: fmt.Sprintf("u-%d", i), Seed: uint64(i), Records: 2000}.Body()
		i++
		b.StartTimer()
		res, err := ts.client.Upload(ctx, bytes.NewReader(body))
		if err != nil || !res.Created {
			b.Fatalf("upload: %v %+v", err, res)
		}
	}
}

// BenchmarkUploadsLoopback8Clients measures sustained uploads per second:
// the server runs in its own process, 8 clients upload 2,000-item probe
// runs to it over loopback.
func BenchmarkUploadsLoopback8Clients(b *testing.B) {
	db, token := newDB(b)
	_, url := startChild(b, db)
	const clients = 8
	bodies := make([][]byte, 64)
	for i := range bodies {
		bodies[i] = servertest.Spec{Seed: uint64(i), Records: 2000}.Body()
	}
	var next atomic.Int64
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &client.Client{BaseURL: url, Token: token, HTTP: hc}
			for {
				n := next.Add(1)
				if n > int64(b.N) {
					return
				}
				// A fresh id each time: the body's id is rewritten in place.
				body := bytes.Replace(bodies[n%int64(len(bodies))], []byte(`"id":"probes-`), []byte(fmt.Sprintf(`"id":"l%d-probes-`, n)), 1)
				if _, err := c.Upload(context.Background(), bytes.NewReader(body)); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "uploads/s")
}

// BenchmarkCompareAPI is GET /api/v1/compare of two real-size runs (1,670
// documents, 2,000 items) at the default 4,000 resamples: "uncached" asks
// for a new seed each time, which is what every GET cost before results
// were cached; "cached" repeats one comparison.
func BenchmarkCompareAPI(b *testing.B) {
	ts := startServer(b, server.Config{})
	for _, tc := range []struct {
		test    string
		records int
	}{{runfile.TestFresh, 1670}, {runfile.TestProbes, 2000}} {
		for i, id := range []string{"base", "head"} {
			sp := servertest.Spec{ID: tc.test + "-" + id, Test: tc.test, Seed: uint64(i), Records: tc.records, Started: day(1 + i)}
			if code, _, body := ts.upload(sp.Body(), ""); code != 201 {
				b.Fatalf("upload: %d %s", code, body)
			}
		}
		get := func(b *testing.B, seed int) {
			resp, err := http.Get(fmt.Sprintf("%s/api/v1/compare?base=%s-base&head=%s-head&seed=%d", ts.url, tc.test, tc.test, seed))
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
		seed := 1000 // shared by every -count, so no seed repeats
		b.Run(tc.test+"/uncached", func(b *testing.B) {
			for b.Loop() {
				seed++
				get(b, seed)
			}
		})
		b.Run(tc.test+"/cached", func(b *testing.B) {
			get(b, 1)
			for b.Loop() {
				get(b, 1)
			}
		})
	}
}
