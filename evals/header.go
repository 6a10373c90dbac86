package evals

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/udgamlabs/udgam-ci/ggufspec"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
)

// HeaderOptions is everything a run header records beyond the model's own
// description. Zero values mean "not given"; Now and Rand default
// to time.Now and crypto/rand so tests can fix them.
type HeaderOptions struct {
	ModelName     string // --model-name; else the GGUF's general.name
	ModelRevision string // --model-revision
	Dataset       runfile.Dataset
	BOSMode       string // auto|yes|no
	Window        int    // fresh text only
	Stride        int
	Formulation   string
	TextPrep      *runfile.TextPrep // how text is prepared for the tokenizer (TextPrepOf)
	Runtime       runfile.Runtime
	Git           runfile.Git // the caller fills it (flags, or the GitHub environment: internal/ghenv)
	Sample        *runfile.Sample
	Shard         *runfile.Shard
	Contamination *runfile.Contamination
	Sequential    *runfile.Sequential

	Now  func() time.Time
	Rand io.Reader // randomness of the run id
}

// NewHeader builds the header of a run of test ("fresh" or "probes") from
// the model's description and opt. It resolves the BOS mode, so an
// impossible mode fails here, before anything is scored.
func NewHeader(test string, info runner.Info, opt HeaderOptions) (runfile.Header, error) {
	addBOS, err := ResolveBOS(opt.BOSMode, info)
	if err != nil {
		return runfile.Header{}, err
	}
	now := time.Now
	if opt.Now != nil {
		now = opt.Now
	}
	started := now().UTC()
	id, err := NewRunID(started, opt.Rand)
	if err != nil {
		return runfile.Header{}, err
	}
	mode := opt.BOSMode
	if mode == "" {
		mode = BOSAuto
	}
	name := cmp.Or(opt.ModelName, info.RunName())
	file := ""
	if info.Path != "" {
		file = filepath.Base(info.Path)
	}
	h := runfile.Header{
		Schema: runfile.Schema,
		ID:     id,
		Test:   test,
		Model: runfile.Model{
			Name:        name,
			Revision:    opt.ModelRevision,
			File:        file,
			SHA256:      info.SHA256,
			Fingerprint: info.Fingerprint,
			Arch:        info.Arch,
			Params:      info.Params,
			Dtype:       info.Dtype,
		},
		Dataset: opt.Dataset,
		Settings: runfile.Settings{
			AddBOS:             addBOS,
			BOSMode:            mode,
			BOSID:              info.BOS,
			Window:             opt.Window,
			Stride:             opt.Stride,
			Dtype:              info.Dtype,
			TokenizerSHA256:    info.TokenizerSHA256,
			Engine:             ggufspec.EngineVersion(),
			Formulation:        opt.Formulation,
			TextPrep:           opt.TextPrep,
			Template:           runfile.TemplateNone,
			ChatTemplateSHA256: info.ChatTemplateSHA256,
		},
		Runtime:       opt.Runtime,
		Git:           opt.Git,
		Sample:        opt.Sample,
		Shard:         opt.Shard,
		Contamination: opt.Contamination,
		Sequential:    opt.Sequential,
		StartedAt:     started,
	}
	if err := h.Validate(); err != nil {
		return runfile.Header{}, err
	}
	return h, nil
}

// NewRunID makes a unique, sortable run id: the start time and 8 random
// bytes, e.g. 20261130T140808Z-1f2e3d4c5b6a7988.
func NewRunID(t time.Time, r io.Reader) (string, error) {
	if r == nil {
		r = rand.Reader
	}
	var b [8]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("run id: %w", err)
	}
	return t.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:]), nil
}
