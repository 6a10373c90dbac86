package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/udgamlabs/udgam-ci/action"
	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/evals/fresh"
	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/hub"
	"github.com/udgamlabs/udgam-ci/internal/atomicfile"
	"github.com/udgamlabs/udgam-ci/runner"
)

type auditOptions struct {
	Reference      string
	Artifact       string // a .gguf path or hf:// reference
	Quantize       string // or a quantization type
	OutDir         string // run files (and a made artifact); "" for a temporary folder
	Data           string
	Items          string
	AddBOS         string
	Window         int
	Stride         int
	MaxDegradation string
	Markdown       string // write the Markdown section here
	Resamples      int
	runFlags
}

// auditFailed is the exit status of an audit whose artifact exceeds
// --max-degradation (errors exit 1, usage 2).
const auditFailed = exitCode(3)

func runAuditArtifact(e *env, args []string) error {
	var o auditOptions
	fs := newFlags(e, "audit artifact",
		"score the artifact you ship (a quantized GGUF) and the full-precision reference it was made from on both tests with the same settings: the paired change of bits per byte and accuracy, the per-token KL divergence on Fresh Text, the probe items that flip by type and level, and a verdict under --max-degradation (exit status 3 when exceeded)",
		"udgam-ci audit artifact --reference smollm2-135m-f32.gguf --quantize q4_K_M --json")
	o.register(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := o.validate(e, pos); err != nil {
		return err
	}
	return auditArtifact(e, o)
}

func (o *auditOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.Reference, "reference", "", "the full-precision GGUF the artifact was made from")
	fs.StringVar(&o.Artifact, "artifact", "", "the artifact: a .gguf file, hf://OWNER/NAME@COMMIT/FILE.gguf, or a quantization type as --quantize")
	fs.StringVar(&o.Quantize, "quantize", "", "instead of --artifact, make it from the reference with llama.cpp's quantizer: "+strings.Join(runner.QuantTypes, ", "))
	fs.StringVar(&o.OutDir, "out-dir", "", "folder for the four run files (and a --quantize artifact); default: a temporary folder, removed")
	fs.StringVar(&o.Data, "data", "", "Fresh Text documents (as score fresh --data; default: the embedded smoke sample)")
	fs.StringVar(&o.Items, "items", "", "Probe Suite items (as score probes --items; default: the core set)")
	fs.StringVar(&o.AddBOS, "add-bos", evals.BOSAuto, "BOS: auto, yes or no (as the score commands)")
	fs.IntVar(&o.Window, "window", 2048, "Fresh Text tokens per window")
	fs.IntVar(&o.Stride, "stride", 1024, "Fresh Text tokens between window starts")
	fs.StringVar(&o.MaxDegradation, "max-degradation", audit.DefaultLimits.String(), "most the artifact may lose, when significant: bits per byte up and accuracy points down")
	fs.StringVar(&o.Markdown, "markdown", "", "also write the report as a Markdown section (a PR comment's) to this file")
	fs.IntVar(&o.Resamples, "resamples", compare.DefaultResamples, "bootstrap resamples")
	o.runFlags.add(fs, "documents and items", "source or type")
}

func (o *auditOptions) validate(e *env, pos []string) error {
	switch {
	case o.Reference == "":
		return usageError{errors.New("--reference is required")}
	case (o.Artifact == "") == (o.Quantize == ""):
		return usageError{errors.New("give one of --artifact and --quantize")}
	case o.Resume:
		return usageError{errors.New("--resume: an audit scores both models afresh")}
	case o.Shard != "":
		return usageError{errors.New("--shard: an audit pairs whole runs")}
	}
	if _, err := audit.ParseLimits(o.MaxDegradation); err != nil {
		return usageError{err}
	}
	if err := atLeast("resamples", o.Resamples, 1); err != nil {
		return err
	}
	// check wants an --out; the audit's files go to --out-dir.
	return o.check(e, pos, o.Reference, "-")
}

func auditArtifact(e *env, o auditOptions) error {
	limits, _ := audit.ParseLimits(o.MaxDegradation)
	if o.Quantize != "" && !runner.IsQuantType(o.Quantize) {
		return usageError{fmt.Errorf("--quantize %q: want one of %s", o.Quantize, strings.Join(runner.QuantTypes, ", "))}
	}
	spec, err := audit.ParseArtifact(o.Artifact + o.Quantize) // validate allows one
	if err != nil {
		return usageError{err}
	}
	cpuOnly, err := o.cpuOnly()
	if err != nil {
		return err
	}
	dir := o.OutDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "udgam-audit-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	rep, err := runAudit(e, auditJob{Reference: o.Reference, Artifact: spec, Data: o.Data, Items: o.Items,
		AddBOS: o.AddBOS, Window: o.Window, Stride: o.Stride, Threads: o.Threads, CPUOnly: cpuOnly,
		Sample: o.Sample, Seed: o.Seed, Limit: o.Limit, Header: o.header(e, o.Threads),
		Limits: limits, Resamples: o.Resamples, Dir: dir})
	if err != nil {
		return err
	}
	if o.Markdown != "" {
		if err := atomicfile.Write(o.Markdown, func(w io.Writer) error { return audit.RenderMarkdown(w, rep) }); err != nil {
			return fmt.Errorf("write %s: %w", o.Markdown, err)
		}
	}
	if o.JSON {
		enc := json.NewEncoder(e.Stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = audit.RenderText(e.Stdout, rep)
	}
	if err != nil {
		return err
	}
	if rep.Verdict == audit.Fail {
		return auditFailed
	}
	return nil
}

// auditJob is one audit as the command line and the Action ask for it.
type auditJob struct {
	Reference           string
	Artifact            audit.Artifact
	Data, Items, AddBOS string
	Window, Stride      int
	Threads             int
	CPUOnly             bool
	Sample              int
	Seed                int64
	Limit               int
	Header              evals.HeaderOptions
	Limits              audit.Limits
	Resamples           int
	Dir                 string
}

// runAudit loads the data, makes or fetches the artifact, loads both
// models and audits.
func runAudit(e *env, j auditJob) (*audit.Report, error) {
	// Data first: a bad file fails before anything is loaded or made.
	data, err := fresh.Load(j.Data, fetchFromHub(e, freshDataName))
	if err != nil {
		return nil, err
	}
	set, err := loadProbeItems(e, j.Items)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(j.Dir, 0o755); err != nil {
		return nil, err
	}
	threads := e.threads(j.Threads)
	artPath, err := resolveArtifact(e, j.Artifact, j.Reference, j.Dir, threads)
	if err != nil {
		return nil, err
	}
	models, closeAll, err := openAuditPair(j.Reference, artPath, threads, j.Window, j.CPUOnly)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	return audit.Run(e.Ctx, models, audit.Options{
		Fresh: fresh.RunOptions{Data: data, BOSMode: j.AddBOS, Window: j.Window, Stride: j.Stride,
			SampleN: j.Sample, SampleSeed: j.Seed, Limit: j.Limit, Header: j.Header, Progress: e.Stderr, Now: e.Now},
		Probes: probes.RunOptions{Data: set, BOSMode: j.AddBOS,
			SampleN: j.Sample, SampleSeed: j.Seed, Limit: j.Limit, Header: j.Header, Progress: e.Stderr, Now: e.Now},
		Dir:       j.Dir,
		Compare:   compare.Options{Resamples: j.Resamples, Seed: compare.DefaultSeed},
		Limits:    j.Limits,
		Quantized: j.Artifact.Quantize,
		Progress:  e.Stderr,
	})
}

// cliAudit is the Action's Deps.Audit.
func cliAudit(e *env) func(ctx context.Context, req action.AuditRequest) (*audit.Report, error) {
	return func(ctx context.Context, req action.AuditRequest) (*audit.Report, error) {
		spec, err := audit.ParseArtifact(req.Artifact)
		if err != nil {
			return nil, err
		}
		ae := *e
		ae.Ctx, ae.Stderr = ctx, e.Stdout // the step's log
		return runAudit(&ae, auditJob{Reference: req.Reference, Artifact: spec, Data: req.FreshData, Items: req.ProbeItems,
			AddBOS: req.AddBOS, Window: req.Window, Stride: req.Stride, Threads: req.Threads, CPUOnly: req.GPU == "cpu",
			Header: evals.HeaderOptions{ModelName: req.ModelName, ModelRevision: req.ModelRevision, Git: req.Git}, Limits: req.Limits, Resamples: req.Resamples, Dir: req.Dir})
	}
}

// resolveArtifact returns the artifact's GGUF: the file, the hub file at
// its pinned commit, or one made from the reference by llama.cpp's
// quantizer in dir.
func resolveArtifact(e *env, spec audit.Artifact, reference, dir string, threads int) (string, error) {
	switch {
	case spec.Quantize != "":
		out := filepath.Join(dir, strings.TrimSuffix(filepath.Base(reference), ".gguf")+"-"+spec.Quantize+".gguf")
		fmt.Fprintf(e.Stderr, "audit: quantizing %s to %s with llama.cpp's quantizer\n", reference, spec.Quantize)
		if err := engineQuantize(reference, out, spec.Quantize, threads); err != nil {
			return "", err
		}
		return out, nil
	case spec.Hub != "":
		client := hub.New(e.Getenv)
		client.Progress = e.Stderr
		r, err := client.ResolveWith(e.Ctx, spec.Hub, hub.ResolveOptions{Kind: hub.Model})
		if err != nil {
			return "", fmt.Errorf("artifact %s: %w", spec.Hub, err)
		}
		return r.Path, nil
	}
	return spec.File, nil
}
