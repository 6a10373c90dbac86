package llama

/*
#cgo CXXFLAGS: -std=c++17
#cgo CFLAGS: -O3
#include <stdlib.h>
#include "llama.h"
#include "log.h"
#include "score.h"
#include "head.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"unsafe"

	ggml "github.com/ollama/ollama/ml/backend/ggml/ggml/src"

	_ "github.com/ollama/ollama/llama/llama.cpp/src"

	"github.com/udgamlabs/udgam-ci/runner"
)

// flash says whether o's attention is fused for a model whose weights are
// quantized or not. The tiled kernel is the CPU's: where layers go to a
// GPU, AttentionAuto keeps llama.cpp's unfused graph (its GPU kernels want
// a float16 cache for flash attention). On the CPU a quantized model is
// fused even without the tiled kernel: ggml's own (on a float32 cache, as
// scripts/engine/patches/0009 edits it) skips the keys the mask hides, takes the
// maximum first and sums in double, so a query's bits depend neither on
// what else is packed in the cache nor on the order of its cells, while
// the unfused graph's products and softmax run over every cell and their
// rounding does; quantized weights round activations to 8 bits, which
// turns that rounding into whole steps (issues 40 and 38).
func (o Options) flash(quantized bool) bool {
	cpu := o.CPUOnly || !bool(C.llama_supports_gpu_offload())
	return o.Attention == AttentionFlash ||
		o.Attention == AttentionAuto && cpu && (TiledAttention() == nil || quantized)
}

// engineChecks are what Load asks of the binary and the CPU before it
// trusts a model to them; a test passes its own to exercise the refusals
// in an exact build on a capable CPU.
type engineChecks struct {
	gelu, rope func() error
	cpu        func() (missing, unused []string)
}

// engineChecks returns o's checks, each defaulting to the real one.
func (o Options) engineChecks() engineChecks {
	c := engineChecks{gelu: ExactGELU, rope: ExactRope, cpu: CPUFeatures}
	if o.checks != nil {
		if o.checks.gelu != nil {
			c.gelu = o.checks.gelu
		}
		if o.checks.rope != nil {
			c.rope = o.checks.rope
		}
		if o.checks.cpu != nil {
			c.cpu = o.checks.cpu
		}
	}
	return c
}

var initOnce sync.Once

// backendInit loads ggml's backends and routes llama.cpp's log to the
// sinks of log.go, once per process; the lines of that first loading go to
// the caller's log, and the GPU report reads the GPU library's errors there.
func backendInit(log *engineLog) {
	initOnce.Do(func() {
		C.udgam_log_install()
		dirs := libDirs()
		libs := gpuLibraries(dirs)
		log.run(func() {
			if len(libs) > 0 {
				openGPUBase(dirs)
			}
			ggml.OnceLoad() // GPU backends placed in OLLAMA_LIBRARY_PATH
			C.llama_backend_init()
			gpuReport = reportGPUs(libs, log.gpuError())
		})
	})
}

// Model is a GGUF model loaded in llama.cpp with one context. It is safe
// for concurrent use; calls are serialised.
type Model struct {
	mu        sync.Mutex
	info      runner.Info
	opts      Options
	model     *C.struct_llama_model
	ctx       *C.struct_llama_context
	vocab     *C.struct_llama_vocab
	mem       C.llama_memory_t
	batch     C.struct_llama_batch
	nVocab    int
	nCtx      int
	recurrent bool
	abort     *C.int
	peakRows  int        // the most rows of logits one decode has asked for
	log       *engineLog // llama.cpp's log during this model's calls
	// head multiplies the hidden rows by the output head where the
	// context left it out of its graph (head.go); nil: the graph's logits
	// are read, a part of a step at a time (parts).
	head *head
	// In a binary with ggml's float16 GELU table or float32 rope angles
	// (a plain go build), a watch on the graphs refuses the models that
	// apply them; nothing is watched in an exact build.
	inexact inexact
}

// Load reads a GGUF file into llama.cpp. The file is checked in Go first
// (runner.ReadInfo), so bad files are Go errors naming the file.
func Load(path string, opts Options) (*Model, error) {
	info, err := runner.ReadInfo(path)
	if err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	if opts.Parallel > MaxParallel {
		return nil, fmt.Errorf("model %s: %d parallel sequences, at most %d", path, opts.Parallel, MaxParallel)
	}
	checks := opts.engineChecks()
	if err := checkCPU(checks.cpu); err != nil {
		return nil, fmt.Errorf("model %s: %w", path, err)
	}
	log := newEngineLog(opts.Verbose, opts.logTo)
	backendInit(log)

	mp := C.llama_model_default_params()
	// Every layer goes to a GPU backend when one is present (Metal is
	// compiled in on macOS arm64; CUDA is loaded from OLLAMA_LIBRARY_PATH);
	// with only the CPU backend this changes nothing.
	mp.n_gpu_layers = 999
	if opts.CPUOnly {
		mp.n_gpu_layers = 0
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var model *C.struct_llama_model
	log.run(func() { model = C.llama_model_load_from_file(cpath, mp) })
	if model == nil {
		defer log.free()
		return nil, fmt.Errorf("model %s: llama.cpp could not load it: %s", path, log.lastError("unknown error"))
	}
	m := &Model{info: info, opts: opts, model: model, log: log}
	if C.llama_model_has_encoder(model) || C.llama_model_is_diffusion(model) {
		m.Close()
		return nil, fmt.Errorf("model %s: architecture %q is not a causal decoder; udgam-ci scores decoder-only models", path, info.Arch)
	}
	m.recurrent = bool(C.llama_model_is_recurrent(model)) || bool(C.llama_model_is_hybrid(model))
	m.vocab = C.llama_model_get_vocab(model)
	m.nVocab = int(C.llama_vocab_n_tokens(m.vocab))
	if m.nVocab != info.VocabSize {
		m.Close()
		return nil, fmt.Errorf("model %s: llama.cpp sees %d tokens, the GGUF lists %d", path, m.nVocab, info.VocabSize)
	}

	cp := C.llama_context_default_params()
	cp.n_ctx = C.uint32_t(opts.Context)
	if opts.SeparateCaches {
		cp.n_ctx = C.uint32_t(opts.Context * opts.Parallel)
	}
	cp.n_batch = C.uint32_t(opts.Batch)
	cp.n_ubatch = C.uint32_t(opts.Batch)
	cp.n_seq_max = C.uint32_t(opts.Parallel)
	cp.n_threads = C.int32_t(opts.Threads)
	cp.n_threads_batch = C.int32_t(opts.Threads)
	cp.no_perf = true
	m.inexact = inexact{gelu: checks.gelu(), rope: checks.rope()}
	if err := m.inexact.watch(&cp); err != nil {
		m.Close()
		return nil, fmt.Errorf("model %s: %w", path, err)
	}
	// A shared prompt is one set of KV cells tagged with several sequence
	// ids; that needs one cache for all sequences.
	cp.kv_unified = C.bool(!opts.SeparateCaches)
	cp.flash_attn_type = C.LLAMA_FLASH_ATTN_TYPE_DISABLED
	if !opts.KVF16 {
		// A float32 cache keeps attention exact to float32 rounding; the
		// float16 default moves log-probabilities by ~1e-3 nats.
		cp.type_k = C.GGML_TYPE_F32
		cp.type_v = C.GGML_TYPE_F32
	}
	if opts.flash(info.Quantized()) {
		cp.flash_attn_type = C.LLAMA_FLASH_ATTN_TYPE_ENABLED
	}
	var ctx *C.struct_llama_context
	headMode.Lock()
	C.udgam_head_mode(C.bool(!opts.graphHead))
	log.run(func() { ctx = C.llama_init_from_model(model, cp) })
	C.udgam_head_mode(false)
	headMode.Unlock()
	if ctx == nil {
		err := fmt.Errorf("model %s: llama.cpp could not create a context (context %d, batch %d, parallel %d): %s",
			path, opts.Context, opts.Batch, opts.Parallel, log.lastError("unknown error"))
		m.Close()
		return nil, err
	}
	m.ctx = ctx
	m.nCtx = int(C.llama_n_ctx_seq(ctx))
	// llama.cpp lowers the batch to the context size and aborts on a
	// larger one: plan with what it kept.
	m.opts.Batch = min(m.opts.Batch, int(C.llama_n_batch(ctx)), int(C.llama_n_ubatch(ctx)))
	if m.head, err = newHead(ctx, m.nVocab, opts.Threads); err != nil {
		m.Close()
		return nil, fmt.Errorf("model %s: %w", path, err)
	}
	m.mem = C.llama_get_memory(ctx)
	m.batch = C.llama_batch_init(C.int32_t(opts.Batch), 0, C.int32_t(opts.Parallel))
	m.abort = (*C.int)(C.calloc(1, C.size_t(unsafe.Sizeof(C.int(0)))))
	C.udgam_set_abort(ctx, m.abort)
	return m, nil
}

// Close frees the model and its context.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.log.run(func() {
		if m.ctx != nil {
			C.llama_batch_free(m.batch)
			C.llama_free(m.ctx)
			m.ctx = nil
		}
		if m.model != nil {
			C.llama_model_free(m.model)
			m.model = nil
		}
	})
	if m.abort != nil {
		C.free(unsafe.Pointer(m.abort))
		m.abort = nil
	}
	m.inexact.free()
	m.log.free()
	return nil
}

// Info describes the model.
func (m *Model) Info() runner.Info { return m.info }

// Limits are the packing limits of this context.
func (m *Model) Limits() runner.Limits {
	return runner.Limits{BatchTokens: m.opts.Batch, MaxSeqs: m.opts.Parallel, Cells: m.nCtx,
		PackCells: m.opts.PackCells, Separate: m.opts.SeparateCaches,
		// A recurrent state belongs to one sequence (Score unshares them).
		ShareStarts: !m.opts.SeparateCaches && !m.recurrent && !m.opts.EachStart}
}

// Tokenize turns text into ids without adding BOS or parsing special tokens,
// so text that looks like "<|endoftext|>" stays text.
func (m *Model) Tokenize(text string) ([]int32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.vocab == nil {
		return nil, errors.New("tokenize: model is closed")
	}
	if len(text) == 0 {
		return nil, nil
	}
	ctext := C.CString(text)
	defer C.free(unsafe.Pointer(ctext))
	n := len(text) + 16
	for {
		buf := make([]C.llama_token, n)
		got := C.llama_tokenize(m.vocab, ctext, C.int32_t(len(text)), &buf[0], C.int32_t(n), false, false)
		if got < 0 {
			if int(-got) <= n {
				return nil, fmt.Errorf("tokenize: llama.cpp failed on %d bytes of text", len(text))
			}
			n = int(-got)
			continue
		}
		out := make([]int32, got)
		for i := range out {
			out[i] = int32(buf[i])
		}
		return out, nil
	}
}

// TokenBytes returns the bytes a token stands for (special tokens give
// none), for callers that count the bytes of a token they do not score.
func (m *Model) TokenBytes(id int32) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if id < 0 || int(id) >= m.nVocab {
		return nil, fmt.Errorf("token id %d out of range [0, %d)", id, m.nVocab)
	}
	buf := make([]byte, 64)
	for {
		n := C.llama_token_to_piece(m.vocab, C.llama_token(id), (*C.char)(unsafe.Pointer(&buf[0])), C.int32_t(len(buf)), 0, false)
		if n < 0 {
			buf = make([]byte, -n)
			continue
		}
		return buf[:n], nil
	}
}

// Detokenize turns ids back into text, for debugging.
func (m *Model) Detokenize(ids []int32) (string, error) {
	var sb strings.Builder
	for _, id := range ids {
		b, err := m.TokenBytes(id)
		if err != nil {
			return "", fmt.Errorf("detokenize: %w", err)
		}
		sb.Write(b)
	}
	return sb.String(), nil
}

// Score evaluates the requests and returns the log-probabilities they ask
// for. Requests are packed several to a decode; see runner.Planner.
func (m *Model) Score(ctx context.Context, reqs []runner.Request) ([]runner.Result, error) {
	return m.score(ctx, reqs, nil)
}

// ScoreEach implements runner.EachScorer: each request's results go to
// done after the decode that completes them.
func (m *Model) ScoreEach(ctx context.Context, reqs []runner.Request, done func(int, runner.Result) error) error {
	_, err := m.score(ctx, reqs, done)
	return err
}

// score is Score, handing each request to done (when not nil) once done.
func (m *Model) score(ctx context.Context, reqs []runner.Request, done func(int, runner.Result) error) ([]runner.Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	planned, unshare, err := m.plan(reqs)
	if err != nil {
		return nil, fmt.Errorf("score: %w", err)
	}
	lim := m.Limits()
	res := runner.NewResults(planned)
	// Whatever happens, leave an empty cache for the next call.
	defer C.llama_memory_clear(m.mem, false)

	defer m.abortOn(ctx)()

	// Unshared requests complete only once Reshare has joined them.
	var track *runner.Completion
	if done != nil && !unshare {
		track = runner.NewCompletion(planned, res, done)
	}
	p := runner.NewPlanner(planned, lim)
	for {
		st, ok := p.Next()
		if !ok {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := m.decode(st, res); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("score: %w", err)
		}
		if track != nil {
			if err := track.Step(st); err != nil {
				return nil, err
			}
		}
	}
	if unshare {
		res = runner.Reshare(reqs, res)
	}
	if done != nil {
		if track == nil {
			track = runner.NewCompletion(reqs, res, done)
		}
		if err := track.Finish(); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// plan checks requests against the model and its context and returns the
// requests to feed: each branch on its own (unshare) where the model's
// sequences cannot share a prompt.
func (m *Model) plan(reqs []runner.Request) (planned []runner.Request, unshare bool, err error) {
	if m.ctx == nil {
		return nil, false, errors.New("model is closed")
	}
	lim := m.Limits()
	if err := runner.CheckTrainingContext(reqs, m.info.TrainedLength()); err != nil {
		return nil, false, err
	}
	// Recurrent state cannot be shared the way KV cells are, nor can
	// separate caches share a prompt: give every branch its own copy.
	planned = reqs
	unshare = m.recurrent || m.opts.SeparateCaches
	if unshare {
		shared := lim
		shared.Separate = false
		if err := runner.Validate(reqs, shared, m.nVocab); err != nil {
			return nil, false, err
		}
		planned = runner.Unshare(reqs)
	}
	if err := runner.Validate(planned, lim, m.nVocab); err != nil {
		return nil, false, err
	}
	return planned, unshare, nil
}

// abortOn makes cancelling ctx stop llama.cpp between graph nodes, until
// the function it returns is called. The callback may still be running
// when the call ends; that function waits for it, so it never writes to a
// flag that Close has freed.
func (m *Model) abortOn(ctx context.Context) func() {
	*m.abort = 0
	flag, fired := m.abort, make(chan struct{})
	stop := context.AfterFunc(ctx, func() { *flag = 1; close(fired) })
	return func() {
		if !stop() {
			<-fired
		}
	}
}

// decode runs one step and reads its log-probabilities into res: the
// whole step where the head is outside the graph (m.head), else a part of
// the step at a time (parts).
func (m *Model) decode(st runner.Step, res []runner.Result) error {
	if m.head != nil {
		outs, rows, err := m.feed(st.Entries)
		if err != nil {
			return err
		}
		next := make([][]int32, len(outs))
		for k, i := range outs {
			for _, r := range st.Entries[i].Reads {
				next[k] = append(next[k], r.Next)
			}
		}
		lse, logits := m.head.scores(rows, next)
		if err := fileReads(st.Entries, outs, lse, func(k, n int) float32 { return logits[k][n] }, res); err != nil {
			return err
		}
		m.release(st)
		return nil
	}
	for _, part := range parts(st.Entries, m.outputRows()) {
		outs, rows, err := m.feed(part)
		if err != nil {
			return err
		}
		// The log-softmax over a 49,152-token vocabulary is about 5% of a
		// decode, so it runs on the threads llama.cpp has just released.
		lse := make([]float64, len(rows))
		forEachParallel(len(rows), m.opts.Threads, func(k int) {
			lse[k] = float64(C.udgam_logsumexp(rows[k], C.int(m.nVocab)))
		})
		logit := func(k, n int) float32 {
			next := part[outs[k]].Reads[n].Next
			return unsafe.Slice((*float32)(unsafe.Pointer(rows[k])), m.nVocab)[next]
		}
		if err := fileReads(part, outs, lse, logit, res); err != nil {
			return err
		}
	}
	m.release(st)
	return nil
}

// fileReads writes into res the log-probability of each read of
// entries[outs[k]]: logit(k, n), its n-th read's logit, less lse[k], the
// row's log-sum-exp (NaN where a logit was not finite: an error).
func fileReads(entries []runner.Entry, outs []int, lse []float64, logit func(k, n int) float32, res []runner.Result) error {
	for k, i := range outs {
		e := entries[i]
		if math.IsNaN(lse[k]) {
			return fmt.Errorf("model produced a non-finite logit (at position %d)", e.Pos)
		}
		for n, r := range e.Reads {
			res[r.Req][r.Branch][r.Index] = float64(logit(k, n)) - lse[k]
		}
	}
	return nil
}

// outputRows is the most rows of logits one llama_decode may ask for, so
// that no step's logits over a large vocabulary are held whole
// (maxLogitBytes).
func (m *Model) outputRows() int {
	return max(1, maxLogitBytes/(4*m.nVocab))
}

// partRows is the most reading rows one decode may hold: unbounded where
// the head is outside the graph (its logits never held whole), else
// outputRows.
func (m *Model) partRows() int {
	if m.head != nil {
		return math.MaxInt
	}
	return m.outputRows()
}

// logitRows returns whole rows of logits for the rows of the last decode:
// those rows where the graph made the logits, else the head's product of
// them (in a buffer of the head's, valid until the next call), for a
// pair's comparison; at most outputRows rows at a time.
func (m *Model) logitRows(rows []*C.float) []*C.float {
	if m.head == nil {
		return rows
	}
	h := m.head
	if len(h.full) < len(rows)*m.nVocab {
		h.full = make([]float32, len(rows)*m.nVocab)
	}
	h.logits(rows, h.full)
	out := make([]*C.float, len(rows))
	for j := range out {
		out[j] = floats(h.full[j*m.nVocab:])
	}
	return out
}

// parts splits a step's entries into consecutive runs, in order, each
// with at most most entries that read logits: the fewest runs, with the
// reads spread evenly over them (equal decodes are quicker than a full
// one and a remainder). A run's tokens attend to the cells the runs
// before it wrote, as they would within one decode.
func parts(entries []runner.Entry, most int) [][]runner.Entry {
	reads := 0
	for _, e := range entries {
		if len(e.Reads) > 0 {
			reads++
		}
	}
	if reads <= most {
		return [][]runner.Entry{entries}
	}
	n := (reads + most - 1) / most
	per := (reads + n - 1) / n
	out := make([][]runner.Entry, 0, n)
	start, seen := 0, 0
	for i, e := range entries {
		if len(e.Reads) == 0 {
			continue
		}
		seen++
		if seen%per == 0 && seen < reads {
			out = append(out, entries[start:i+1])
			start = i + 1
		}
	}
	return append(out, entries[start:])
}

// release frees the cache cells of the sequences a step finished.
func (m *Model) release(st runner.Step) {
	for _, s := range st.Release {
		C.llama_memory_seq_rm(m.mem, C.llama_seq_id(s), -1, -1)
	}
}

// feed decodes entries, a step or a part of one (parts), and returns the
// batch indices whose next-token distributions they read, with their rows
// of logits (valid until the next decode).
func (m *Model) feed(entries []runner.Entry) ([]int, []*C.float, error) {
	if len(entries) == 0 || len(entries) > m.opts.Batch {
		return nil, nil, fmt.Errorf("internal: step of %d tokens for a batch of %d", len(entries), m.opts.Batch)
	}
	// llama.cpp asserts (aborting the process) where a recurrent state cell
	// it must copy is missing: each token of a recurrent or hybrid model
	// belongs to one sequence, and every sequence id has a state slot.
	for _, e := range entries {
		if m.recurrent && len(e.Seqs) != 1 {
			return nil, nil, fmt.Errorf("internal: a token of recurrent model %s in %d sequences; its state is one sequence's", m.info.Path, len(e.Seqs))
		}
		for _, id := range e.Seqs {
			if id < 0 || int(id) >= m.opts.Parallel {
				return nil, nil, fmt.Errorf("internal: sequence id %d outside the %d parallel sequences", id, m.opts.Parallel)
			}
		}
	}
	seqs := make([]C.llama_seq_id, m.opts.Parallel)
	for i, e := range entries {
		for s, id := range e.Seqs {
			seqs[s] = C.llama_seq_id(id)
		}
		var out C.int8_t
		if len(e.Reads) > 0 {
			out = 1
		}
		C.udgam_batch_set(&m.batch, C.int(i), C.llama_token(e.Token), C.llama_pos(e.Pos), &seqs[0], C.int(len(e.Seqs)), out)
	}
	m.batch.n_tokens = C.int32_t(len(entries))
	var rc C.int32_t
	m.log.run(func() { rc = C.llama_decode(m.ctx, m.batch) })
	if rc != 0 {
		return nil, nil, fmt.Errorf("llama_decode returned %d: %s", int(rc), m.log.lastError("no message"))
	}
	if err := m.inexact.check(m.info.Path, m.info.Arch); err != nil {
		return nil, nil, err
	}
	var outs []int // batch indices whose log-probabilities are read
	for i, e := range entries {
		if len(e.Reads) > 0 {
			outs = append(outs, i)
		}
	}
	m.peakRows = max(m.peakRows, len(outs))
	rows := make([]*C.float, len(outs))
	for k, i := range outs {
		if rows[k] = C.llama_get_logits_ith(m.ctx, C.int32_t(i)); rows[k] == nil {
			return nil, nil, fmt.Errorf("internal: no logits for batch token %d", i)
		}
	}
	return outs, rows, nil
}

// logitsBytes is the size of the context's logits buffer (-1 where the C
// library cannot say), for tests that hold it to outputRows.
func (m *Model) logitsBytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return int64(C.udgam_logits_bytes(m.ctx))
}

// forEachParallel calls f(0) ... f(n-1) on up to workers goroutines and
// returns when all calls have.
func forEachParallel(n, workers int, f func(int)) {
	forEachWorker(n, workers, func(_, k int) { f(k) })
}

// forEachWorker is forEachParallel telling f which goroutine, 0 to
// workers-1, calls it, for buffers of each worker's own.
func forEachWorker(n, workers int, f func(w, k int)) {
	workers = min(workers, n)
	if workers <= 1 {
		for k := range n {
			f(0, k)
		}
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := w; k < n; k += workers {
				f(w, k)
			}
		}()
	}
	wg.Wait()
}
