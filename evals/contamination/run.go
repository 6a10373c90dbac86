package contamination

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/udgamlabs/udgam-ci/evals"
)

// Options control a scan.
type Options struct {
	TextField   string  // JSON key or Parquet column holding the text (default "text")
	Workers     int     // files scanned at once (default: all cores)
	MinFraction float64 // items above it are counted apart
	// Shard i of n (1-based) scans every n-th input file, so that a matrix
	// of jobs covers a corpus; `contamination merge` joins their reports.
	ShardIndex, ShardCount int
	// State, when set, is a JSON Lines file with one line per finished
	// file, so that a scan killed part way resumes where it stopped.
	State  string
	Resume bool
	// Progress receives a bar or a plain line every few seconds.
	Progress         io.Writer
	ProgressTerminal bool
	Tests            map[string]TestSet
}

// stateLine records one finished file.
type stateLine struct {
	File  TrainFile `json:"file"`
	Items []ItemHit `json:"items"`
}

// Scan streams the inputs once against the index and returns the report.
func Scan(ctx context.Context, ix *Index, inputs []Input, opt Options) (*Report, error) {
	if opt.TextField == "" {
		opt.TextField = "text"
	}
	if opt.Workers <= 0 {
		opt.Workers = runtime.NumCPU()
	}
	r := &Report{Schema: Schema, N: ix.n, MinWords: ix.minWords, Normalization: Normalization,
		IndexSHA256: ix.fingerprint(), Tests: opt.Tests, MinFraction: opt.MinFraction, TextField: opt.TextField}
	mine := inputs
	if opt.ShardCount > 0 {
		if opt.ShardIndex < 1 || opt.ShardIndex > opt.ShardCount {
			return nil, fmt.Errorf("shard %d/%d: want 1 <= i <= n", opt.ShardIndex, opt.ShardCount)
		}
		r.Shard = fmt.Sprintf("%d/%d", opt.ShardIndex, opt.ShardCount)
		mine = nil
		for i, in := range inputs {
			if i%opt.ShardCount == opt.ShardIndex-1 {
				mine = append(mine, in)
			}
		}
	}
	order := map[string]int{}
	for i, in := range inputs {
		order[in.Path] = i
	}

	hits := map[int32]*hit{}
	done := map[string]TrainFile{}
	if opt.State != "" && opt.Resume {
		if err := ix.readState(opt.State, done, hits); err != nil {
			return nil, err
		}
	}
	var state *os.File
	if opt.State != "" {
		flag := os.O_CREATE | os.O_WRONLY | os.O_APPEND
		if !opt.Resume {
			flag |= os.O_TRUNC
		}
		var err error
		if state, err = os.OpenFile(opt.State, flag, 0o644); err != nil {
			return nil, fmt.Errorf("open scan state: %w", err)
		}
		defer state.Close()
	}

	var todo []Input
	var totalMB, skippedMB int
	for _, in := range mine {
		mb := int((in.Size + 1<<20 - 1) >> 20)
		totalMB += mb
		if f, ok := done[in.Path]; ok && f.Size == in.Size {
			skippedMB += mb
			continue
		}
		todo = append(todo, in)
	}
	if len(done) > 0 && opt.Progress != nil {
		fmt.Fprintf(opt.Progress, "resuming: %d of %d files already scanned\n", len(mine)-len(todo), len(mine))
	}
	prog := evals.NewProgress(opt.Progress, totalMB, evals.ProgressOptions{Label: "MB", Terminal: opt.ProgressTerminal, Every: 5 * time.Second})
	prog.Skip(skippedMB, 0)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan Input)
	var mu sync.Mutex // guards hits, done, state, prog and firstErr
	var firstErr error
	var wg sync.WaitGroup
	for range min(opt.Workers, max(len(todo), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for in := range jobs {
				m := newMatcher(ix)
				tf, err := scanInput(ctx, m, &in, order[in.Path], opt.TextField)
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = err
						cancel()
					}
					mu.Unlock()
					continue
				}
				mergeHits(hits, m.hits)
				done[in.Path] = tf
				if state != nil {
					if err := writeState(state, tf, ix, m.hits); err != nil && firstErr == nil {
						firstErr = err
						cancel()
					}
				}
				prog.Add(int((in.Size+1<<20-1)>>20), int(tf.Words))
				mu.Unlock()
			}
		}()
	}
feed:
	for _, in := range todo {
		select {
		case jobs <- in:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	prog.Done()
	for _, in := range mine {
		tf := done[in.Path]
		r.Train = append(r.Train, tf)
		r.Words += tf.Words
		r.Bytes += tf.Bytes
	}
	ix.build(r, hits)
	r.TooShort = ix.Skipped()
	return r, nil
}

// scanInput scans one file with its own matcher.
func scanInput(ctx context.Context, m *matcher, in *Input, index int, field string) (TrainFile, error) {
	tf := TrainFile{Path: in.Path, Size: in.Size}
	f, closeFile, err := in.open(ctx)
	if err != nil {
		return tf, fmt.Errorf("open training file %s: %w", in.Path, err)
	}
	defer closeFile()
	src := &source{file: in.Path, fileIndex: index, rows: in.Format == "parquet"}
	if in.Format == "parquet" {
		err = parquetColumn(f, in.Path, field, func(row int, text string, null bool) {
			tf.Records++
			if null {
				tf.noText(row)
				return
			}
			m.reset()
			m.scan(src, row, text, 0)
		})
	} else {
		var r io.Reader
		var closeFn func()
		if r, closeFn, err = in.reader(f); err != nil {
			return tf, err
		}
		defer closeFn()
		err = scanLines(ctx, m, in, src, field, r, &tf)
	}
	if err != nil {
		return tf, err
	}
	tf.Words, tf.Bytes = m.words, m.bytes
	tf.InvalidUTF8, tf.InvalidUTF8First = m.invalid, m.invalidAt
	return tf, nil
}

func writeState(f *os.File, tf TrainFile, ix *Index, hits map[int32]*hit) error {
	var tmp Report
	ix.build(&tmp, hits)
	b, err := json.Marshal(stateLine{File: tf, Items: tmp.Items})
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write scan state: %w", err)
	}
	return f.Sync()
}

func (ix *Index) readState(path string, done map[string]TrainFile, hits map[int32]*hit) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read scan state: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), maxRecord)
	for n := 1; sc.Scan(); n++ {
		var s stateLine
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			// A line cut by a kill is the last one; what it held is scanned again.
			if !sc.Scan() {
				break
			}
			return fmt.Errorf("read scan state %s line %d: %w", path, n, err)
		}
		h, err := ix.hitsFrom(s.Items)
		if err != nil {
			return fmt.Errorf("read scan state %s line %d: %w", path, n, err)
		}
		mergeHits(hits, h)
		done[s.File.Path] = s.File
	}
	return sc.Err()
}

// Merge joins the reports of shards of one scan over the same test items.
func Merge(ix *Index, reports []*Report) (*Report, error) {
	if len(reports) == 0 {
		return nil, errors.New("merge: no reports")
	}
	fp := ix.fingerprint()
	out := &Report{Schema: Schema, N: ix.n, MinWords: ix.minWords, Normalization: Normalization, IndexSHA256: fp,
		Tests: reports[0].Tests, MinFraction: reports[0].MinFraction, TextField: reports[0].TextField}
	hits := map[int32]*hit{}
	files := map[string]bool{}
	for i, r := range reports {
		if r.IndexSHA256 != fp {
			return nil, fmt.Errorf("report %d was scanned against other test items or another n (index %s, want %s)", i+1, short(r.IndexSHA256), short(fp))
		}
		for _, tf := range r.Train {
			if files[tf.Path] {
				return nil, fmt.Errorf("training file %s is in two reports", tf.Path)
			}
			files[tf.Path] = true
			out.Train = append(out.Train, tf)
			out.Words += tf.Words
			out.Bytes += tf.Bytes
		}
		h, err := ix.hitsFrom(r.Items)
		if err != nil {
			return nil, fmt.Errorf("report %d: %w", i+1, err)
		}
		mergeHits(hits, h)
	}
	ix.build(out, hits)
	out.TooShort = ix.Skipped()
	return out, nil
}

func short(s string) string { return s[:min(len(s), 12)] }
