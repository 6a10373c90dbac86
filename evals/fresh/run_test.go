package fresh

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/internal/goldentest"
	"github.com/udgamlabs/udgam-ci/internal/testexec"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
)

var update = flag.Bool("update", false, "rewrite golden files")

// steppingClock returns a time that moves 2s at each call.
func steppingClock() func() time.Time {
	t := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	return func() time.Time { t = t.Add(2 * time.Second); return t }
}

func runOptions(data *Data, out string) RunOptions {
	return RunOptions{
		RunCommon: evals.RunCommon{
			Out: out, BOSMode: "auto",
			Header: evals.HeaderOptions{
				ModelName: "bigram-3",
				Rand:      bytes.NewReader(bytes.Repeat([]byte{0xab}, 64)),
			},
			Now: steppingClock(),
		},
		Data: data, Window: 64, Stride: 32, BatchTokens: 300,
	}
}

func genData(n int) *Data {
	docs := GenerateDocs(21, n, 100, 3000)
	return &Data{Docs: docs, Dataset: runfile.Dataset{Name: "gen", SHA256: "00", Count: n}}
}

// failingModel fails its Score call number failAt (1-based).
type failingModel struct {
	*byteModel
	failAt int
}

func (m *failingModel) Score(ctx context.Context, reqs []runner.Request) ([]runner.Result, error) {
	if m.calls+1 == m.failAt {
		return nil, errors.New("engine died")
	}
	return m.byteModel.Score(ctx, reqs)
}

func sameDocs(t *testing.T, got, want []runfile.Doc) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("record %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestRunResumeAfterFailureAndTornLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := genData(30)
	whole, err := Run(context.Background(), newByteModel(3), runOptions(data, filepath.Join(dir, "whole.jsonl")))
	if err != nil {
		t.Fatal(err)
	}

	path := filepath.Join(dir, "killed.jsonl")
	_, err = Run(context.Background(), &failingModel{newByteModel(3), 6}, runOptions(data, path))
	if err == nil || !strings.Contains(err.Error(), "engine died") || !strings.Contains(err.Error(), "--resume") {
		t.Fatalf("failed run: %v", err)
	}
	before, err := runfile.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(before.Docs); n == 0 || n >= 30 {
		t.Fatalf("the failed run left %d records: the test needs some but not all", n)
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"id":"gen-000`) // a write cut by the kill
	f.Close()

	// Without --resume the file is not touched.
	if _, err := Run(context.Background(), newByteModel(3), runOptions(data, path)); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Errorf("rerun without --resume: %v", err)
	}
	m := newByteModel(3)
	opt := runOptions(data, path)
	opt.Resume = true
	var progress strings.Builder
	opt.Progress = &progress
	res, err := Run(context.Background(), m, opt)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("resuming %s: %d documents already scored, %d to go", path, len(before.Docs), 30-len(before.Docs)); !strings.Contains(progress.String(), want) {
		t.Errorf("progress %q lacks %q", progress.String(), want)
	}
	if !res.Resumed || res.Skipped != len(before.Docs) || res.Scored != 30-len(before.Docs) {
		t.Errorf("resume: resumed=%v skipped=%d scored=%d, %d were done", res.Resumed, res.Skipped, res.Scored, len(before.Docs))
	}
	sameDocs(t, res.Run.Docs, whole.Run.Docs)
	if res.Run.Header.ID != before.Header.ID {
		t.Errorf("resume changed the run id: %s -> %s", before.Header.ID, res.Run.Header.ID)
	}

	// Resuming with another window is refused.
	opt = runOptions(data, path)
	opt.Resume, opt.Window = true, 128
	if _, err := Run(context.Background(), newByteModel(3), opt); err == nil || !strings.Contains(err.Error(), "window") {
		t.Errorf("resume with another window: %v", err)
	}
}

func TestRunShardsMergeToTheWholeRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := genData(25)
	sample := func(o RunOptions) RunOptions { o.Selection.Sample, o.Selection.Seed = 17, 9; return o }
	whole, err := Run(context.Background(), newByteModel(3), sample(runOptions(data, filepath.Join(dir, "whole.jsonl"))))
	if err != nil {
		t.Fatal(err)
	}
	if whole.Summary.Docs != 17 || whole.Run.Header.Sample == nil || len(whole.Run.Header.Sample.IDs) != 17 {
		t.Fatalf("sample of 17: %d docs, header sample %+v", whole.Summary.Docs, whole.Run.Header.Sample)
	}
	var shards []*runfile.Run
	for i := 1; i <= 3; i++ {
		opt := sample(runOptions(data, filepath.Join(dir, "shard.jsonl"+string(rune('0'+i)))))
		opt.Selection.Shard = &runfile.Shard{Index: i, Count: 3}
		res, err := Run(context.Background(), newByteModel(3), opt)
		if err != nil {
			t.Fatal(err)
		}
		shards = append(shards, res.Run)
	}
	merged, err := evals.Merge(shards)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]runfile.Doc{}
	for _, d := range merged.Docs {
		got[d.ID] = d
	}
	for _, d := range whole.Run.Docs {
		if !reflect.DeepEqual(got[d.ID], d) {
			t.Errorf("merged %s = %+v, want %+v", d.ID, got[d.ID], d)
		}
	}
	if len(got) != len(whole.Run.Docs) {
		t.Errorf("merged %d docs, want %d", len(got), len(whole.Run.Docs))
	}
	if s := runfile.SummarizeFresh(merged.Docs); relErr(s.BPB, whole.Summary.BPB) > 1e-12 {
		t.Errorf("merged bpb %v, whole %v", s.BPB, whole.Summary.BPB)
	}
}

// TestRunContextHint: a window longer than the model's context is refused
// with a whole setting that fits, and that setting then scores (the hint
// once named the window alone, whose default stride was refused in turn).
func TestRunContextHint(t *testing.T) {
	t.Parallel()
	data := genData(3)
	for _, tt := range []struct {
		window, stride int
		hint           string
	}{
		{8192, 4096, "use --window 4096 --stride 2048"}, // the stride would equal the window: halved
		{8192, 8000, "use --window 4096 --stride 2048"},
		{8192, 1024, "use --window 4096 --stride 1024"}, // a stride that fits is kept
	} {
		opt := runOptions(data, filepath.Join(t.TempDir(), "r.jsonl"))
		opt.Window, opt.Stride = tt.window, tt.stride
		_, err := Run(context.Background(), newByteModel(1), opt)
		if err == nil || !strings.Contains(err.Error(), "("+tt.hint+")") {
			t.Errorf("window %d stride %d: %v, want the hint %q", tt.window, tt.stride, err, tt.hint)
			continue
		}
		if _, err := fmt.Sscanf(tt.hint, "use --window %d --stride %d", &opt.Window, &opt.Stride); err != nil {
			t.Fatal(err)
		}
		if _, err := Run(context.Background(), newByteModel(1), opt); err != nil {
			t.Errorf("window %d stride %d: the hinted setting fails: %v", tt.window, tt.stride, err)
		}
	}
	if got := fitHint(1, 1); !strings.Contains(got, "no window fits") {
		t.Errorf("context 1: %q, want no setting named", got)
	}
}

func TestRunRefusesBadSettings(t *testing.T) {
	t.Parallel()
	data := genData(3)
	tests := []struct {
		name string
		edit func(*RunOptions)
		m    runner.Model // nil: a byte model
		want string
	}{
		{"stride", func(o *RunOptions) { o.Stride = 64 }, nil, "stride 64"},
		{"context", func(o *RunOptions) { o.Window, o.Stride = 8192, 4096 }, nil, "longer than the model's context length 4096"},
		{"bos mode", func(o *RunOptions) { o.BOSMode = "sometimes" }, nil, `BOS mode "sometimes"`},
		{"no bos, no token bytes", func(o *RunOptions) { o.BOSMode = "no" }, noTokenBytes{newByteModel(1)}, "--add-bos yes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opt := runOptions(data, filepath.Join(t.TempDir(), "r.jsonl"))
			tt.edit(&opt)
			m := tt.m
			if m == nil {
				m = newByteModel(1)
			}
			if _, err := Run(context.Background(), m, opt); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// noTokenBytes hides TokenBytes.
type noTokenBytes struct{ m *byteModel }

func (n noTokenBytes) Tokenize(s string) ([]int32, error) { return n.m.Tokenize(s) }
func (n noTokenBytes) Info() runner.Info                  { return n.m.Info() }
func (n noTokenBytes) Score(ctx context.Context, r []runner.Request) ([]runner.Result, error) {
	return n.m.Score(ctx, r)
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldentest.Check(t, filepath.Join("testdata", name), got, *update)
}

func TestRunSmoke(t *testing.T) {
	t.Parallel()
	smoke, err := Smoke()
	if err != nil {
		t.Fatal(err)
	}
	for _, bos := range []string{"yes", "no"} {
		opt := runOptions(smoke, filepath.Join(t.TempDir(), "run.jsonl"))
		opt.BOSMode = bos
		var progress, text, js bytes.Buffer
		opt.Progress = &progress
		res, err := Run(context.Background(), newByteModel(3), opt)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Run.Header.Dataset.Smoke || res.Summary.Docs != len(smoke.Docs) || res.Run.Header.Settings.AddBOS != (bos == "yes") {
			t.Errorf("smoke run: dataset %+v, %d docs, settings %+v", res.Run.Header.Dataset, res.Summary.Docs, res.Run.Header.Settings)
		}
		if !strings.Contains(progress.String(), "30/30 docs") {
			t.Errorf("progress %q", progress.String())
		}
		if err := WriteText(&text, res); err != nil {
			t.Fatal(err)
		}
		if err := WriteJSON(&js, res); err != nil {
			t.Fatal(err)
		}
		var parsed map[string]any
		if err := json.Unmarshal(js.Bytes(), &parsed); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"test", "bpb", "bits", "bytes", "docs", "tokens", "by_source", "settings", "seconds"} {
			if _, ok := parsed[k]; !ok {
				t.Errorf("--json lacks %q", k)
			}
		}
		if parsed["smoke"] != true || !strings.Contains(text.String(), "SMOKE SAMPLE, NOT THE BENCHMARK") {
			t.Error("the summary does not say it is a smoke sample")
		}
	}
}

// fixedResult is a finished run built by hand, so the golden files do not
// change with the test model or the engine version.
func fixedResult(smoke bool) Result {
	h := testHeaderFor(smoke)
	docs := []runfile.Doc{
		{ID: "a", Source: "arxiv", Bytes: 1000, Tokens: 250, Bits: 900, Windows: 1, TextBytes: 1000},
		{ID: "b", Source: "wikipedia", Bytes: 3000, Tokens: 700, Bits: 2400.5, Windows: 2, TextBytes: 3000},
		{ID: "c", Source: "wikipedia", Bytes: 500, Tokens: 120, Bits: 410.25, Windows: 1, TextBytes: 500},
	}
	run := &runfile.Run{Header: h, Docs: docs}
	return Result{Tally: evals.Tally{Out: "run.jsonl", Run: run, Seconds: 4, Scored: 2, Tokens: 820, Skipped: 1, Resumed: !smoke},
		Summary: runfile.SummarizeFresh(docs)}
}

func testHeaderFor(smoke bool) runfile.Header {
	h := runfile.Header{
		Schema: runfile.Schema, ID: "20261130T120000Z-0000000000000001", Test: runfile.TestFresh,
		Model:   runfile.Model{Name: "tiny", SHA256: "aa"},
		Dataset: runfile.Dataset{Name: "fresh-2026-10.jsonl", Revision: "r1", SHA256: "0123456789abcdef0123", Count: 3},
		Settings: runfile.Settings{AddBOS: true, BOSMode: "auto", BOSID: 1, Window: 2048, Stride: 1024, Dtype: "F16",
			TokenizerSHA256: "tt", Engine: "engine 1", Formulation: FormulationBOS},
		Sample: &runfile.Sample{N: 3, Seed: 5, IDs: []string{"a", "b", "c"}},
		Shard:  &runfile.Shard{Index: 2, Count: 4},
	}
	if smoke {
		h.Dataset = runfile.Dataset{Name: SmokeName, Revision: "embedded", SHA256: "ff", Count: 3, Smoke: true}
		h.Settings.AddBOS, h.Settings.BOSMode, h.Settings.Formulation = false, "no", FormulationNoBOS
		h.Sample, h.Shard = nil, nil
	}
	return h
}

func TestSummaryGolden(t *testing.T) {
	t.Parallel()
	for _, smoke := range []bool{false, true} {
		name := "summary"
		if smoke {
			name = "summary-smoke"
		}
		var text, js bytes.Buffer
		if err := WriteText(&text, fixedResult(smoke)); err != nil {
			t.Fatal(err)
		}
		if err := WriteJSON(&js, fixedResult(smoke)); err != nil {
			t.Fatal(err)
		}
		golden(t, name+".txt", text.Bytes())
		golden(t, name+".json", js.Bytes())
	}
}

// blockingModel scores normally for its first calls and then blocks until
// the process is killed.
type blockingModel struct {
	*byteModel
	blockAt int
}

func (m *blockingModel) Score(ctx context.Context, reqs []runner.Request) ([]runner.Result, error) {
	if m.calls+1 >= m.blockAt {
		time.Sleep(time.Hour) // wait for kill -9 (a sleep, so the runtime sees no deadlock)
	}
	return m.byteModel.Score(ctx, reqs)
}

const killChildEnv = "UDGAM_FRESH_KILL_CHILD"

// TestKillChild is the process TestResumeAfterKill kills; it does nothing
// in a normal test run.
func TestKillChild(t *testing.T) {
	t.Parallel()
	path := os.Getenv(killChildEnv)
	if path == "" {
		t.Skip("helper process for TestResumeAfterKill")
	}
	opt := runOptions(genData(20), path)
	opt.BatchTokens = 1 // one document per call: 5 records before it blocks
	Run(context.Background(), &blockingModel{newByteModel(3), 6}, opt)
	t.Fatal("the child was not killed")
}

func TestResumeAfterKill(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a subprocess")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "killed.jsonl")
	cmd := testexec.Self("-test.run=^TestKillChild$")
	cmd.Env = append(os.Environ(), killChildEnv+"="+path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Wait for the header and 5 records, then kill -9.
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if bytes.Count(b, []byte("\n")) >= 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child wrote %q and no more", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	data := genData(20)
	whole, err := Run(context.Background(), newByteModel(3), runOptions(data, filepath.Join(dir, "whole.jsonl")))
	if err != nil {
		t.Fatal(err)
	}
	opt := runOptions(data, path)
	opt.Resume = true
	res, err := Run(context.Background(), newByteModel(3), opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped != 5 {
		t.Errorf("resume skipped %d documents, want the 5 the child wrote", res.Skipped)
	}
	sameDocs(t, res.Run.Docs, whole.Run.Docs)
}

// interruptedModel scores every window of a call, then hands them over one
// by one (runner.EachScorer) and is interrupted after the first `after`:
// one engine call that packs every document, cut part way.
type interruptedModel struct {
	*byteModel
	cancel func()
	after  int
}

func (m *interruptedModel) ScoreEach(ctx context.Context, reqs []runner.Request, done func(int, runner.Result) error) error {
	res, err := m.byteModel.Score(ctx, reqs)
	if err != nil {
		return err
	}
	for i, r := range res {
		if i == m.after {
			m.cancel()
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := done(i, r); err != nil {
			return err
		}
	}
	return nil
}

func (m *interruptedModel) Score(ctx context.Context, reqs []runner.Request) ([]runner.Result, error) {
	out := make([]runner.Result, len(reqs))
	if err := m.ScoreEach(ctx, reqs, func(i int, r runner.Result) error { out[i] = r; return nil }); err != nil {
		return nil, err
	}
	return out, nil
}

// A run interrupted inside its first engine call keeps the documents that
// call finished, and its progress counted them as they finished (issue 32:
// Fresh Text stopped in its first batch saved 0 of 30 documents).
func TestInterruptedCallKeepsFinishedDocuments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := genData(30)
	whole, err := Run(context.Background(), newByteModel(3), runOptions(data, filepath.Join(dir, "whole.jsonl")))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := &interruptedModel{byteModel: newByteModel(3), cancel: cancel}
	opt := runOptions(data, filepath.Join(dir, "cut.jsonl"))
	opt.BatchTokens = 1 << 30 // every document in one call
	var calls, windows int
	opt.Progress = io.Discard
	probe := &countingModel{Model: newByteModel(3), calls: &calls, reqs: &windows}
	popt := runOptions(data, filepath.Join(dir, "count.jsonl"))
	popt.BatchTokens = opt.BatchTokens
	if _, err := Run(context.Background(), probe, popt); err != nil || calls != 1 {
		t.Fatalf("the run takes %d engine calls (%v); the test needs one", calls, err)
	}
	m.after = windows / 2
	var progress strings.Builder
	opt.Progress = &progress
	if _, err := Run(ctx, m, opt); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Fatalf("interrupted run: %v", err)
	}
	cut, err := runfile.ReadFile(opt.Out)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(cut.Docs); n < 5 || n >= 30 {
		t.Fatalf("the interrupted call saved %d of 30 documents; want those it finished", n)
	}
	sameDocs(t, cut.Docs, whole.Run.Docs[:len(cut.Docs)])
	if !strings.Contains(progress.String(), fmt.Sprintf("%d/30", len(cut.Docs))) {
		t.Errorf("progress never counted the %d finished documents:\n%s", len(cut.Docs), progress.String())
	}
}

// countingModel counts engine calls and the requests they carry.
type countingModel struct {
	runner.Model
	calls, reqs *int
}

func (m *countingModel) Score(ctx context.Context, reqs []runner.Request) ([]runner.Result, error) {
	*m.calls++
	*m.reqs += len(reqs)
	return m.Model.Score(ctx, reqs)
}
