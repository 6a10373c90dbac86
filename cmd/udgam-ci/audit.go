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
	"github.com/udgamlabs/udgam-ci/evals/audit"
	"github.com/udgamlabs/udgam-ci/evals/fresh"
	"github.com/udgamlabs/udgam-ci/evals/probes"
	"github.com/udgamlabs/udgam-ci/hub"
	"github.com/udgamlabs/udgam-ci/internal/atomicfile"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
)

type auditOptions struct {
	Reference      string
	Artifact       string // a .gguf path or hf:// reference
	Quantize       string // or a quantization type
	OutDir         string // run files (and a made artifact); "" for a temporary folder
	Data           string
	Items          string
	Window         int
	Stride         int
	MaxDegradation string
	Markdown       string // write the Markdown section here
	Resamples      int
	scoreFlags

	// artifact and limits are Artifact or Quantize and MaxDegradation,
	// parsed by validate.
	artifact audit.Artifact
	limits   audit.Limits
}

// auditFailed is the exit status of an audit whose artifact exceeds
// --max-degradation (errors exit 1, usage 2).
const auditFailed = exitCode(3)

func runAuditArtifact(e *env, args []string) error {
	o := newAuditOptions()
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

// newAuditOptions are audit artifact's defaults, the score commands'
// where they share a flag.
func newAuditOptions() auditOptions {
	return auditOptions{Window: fresh.DefaultWindow, Stride: fresh.DefaultStride, MaxDegradation: audit.DefaultLimits.String(),
		Resamples: compare.DefaultResamples, scoreFlags: newScoreFlags()}
}

// register binds o's fields to flags, their values the defaults.
func (o *auditOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.Reference, "reference", "", "the full-precision GGUF the artifact was made from")
	fs.StringVar(&o.Artifact, "artifact", "", "the artifact: a .gguf file, hf://OWNER/NAME@COMMIT/FILE.gguf, or a quantization type as --quantize")
	fs.StringVar(&o.Quantize, "quantize", "", "instead of --artifact, make it from the reference with llama.cpp's quantizer: "+strings.Join(runner.QuantTypes, ", "))
	fs.StringVar(&o.OutDir, "out-dir", "", "folder for the four run files (and a --quantize artifact); default: a temporary folder, removed")
	fs.StringVar(&o.Data, "data", "", "Fresh Text documents (as score fresh --data; default: the embedded smoke sample)")
	fs.StringVar(&o.Items, "items", "", "Probe Suite items (as score probes --items; default: the core set)")
	fs.StringVar(&o.Run.BOSMode, "add-bos", o.Run.BOSMode, "BOS: auto, yes or no (as the score commands)")
	addWindowFlags(fs, &o.Window, &o.Stride)
	fs.StringVar(&o.MaxDegradation, "max-degradation", o.MaxDegradation, "most the artifact may lose, when significant: bits per byte up and accuracy points down")
	fs.StringVar(&o.Markdown, "markdown", "", "also write the report as a Markdown section (a PR comment's) to this file")
	fs.IntVar(&o.Resamples, "resamples", o.Resamples, "bootstrap resamples")
	o.scoreFlags.add(fs, "documents and items", "source or type")
}

func (o *auditOptions) validate(e *env, pos []string) error {
	switch {
	case o.Reference == "":
		return usageError{errors.New("--reference is required")}
	case (o.Artifact == "") == (o.Quantize == ""):
		return usageError{errors.New("give one of --artifact and --quantize")}
	case o.Run.Resume:
		return usageError{errors.New("--resume: an audit scores both models afresh")}
	case o.Run.Selection.Shard != nil:
		return usageError{errors.New("--shard: an audit pairs whole runs")}
	case o.Until != "" && o.Until != "all":
		return usageError{errors.New("--until: an audit pairs whole runs")}
	case o.Quantize != "" && !runner.IsQuantType(o.Quantize):
		return usageError{fmt.Errorf("--quantize %q: want one of %s", o.Quantize, strings.Join(runner.QuantTypes, ", "))}
	}
	var err error
	if o.artifact, err = audit.ParseArtifact(o.Artifact + o.Quantize); err != nil { // one is empty
		return usageError{err}
	}
	if o.limits, err = audit.ParseLimits(o.MaxDegradation); err != nil {
		return usageError{err}
	}
	if err := atLeast("resamples", o.Resamples, 1); err != nil {
		return err
	}
	// check wants an --out; the audit's files go to --out-dir.
	return o.check(e, pos, o.Reference, "-")
}

func auditArtifact(e *env, o auditOptions) error {
	rep, err := o.run(e)
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

// run loads the data, makes or fetches the artifact, loads both models
// and audits: the command's work and the Action's.
func (o *auditOptions) run(e *env) (*audit.Report, error) {
	cpuOnly, err := o.cpuOnly()
	if err != nil {
		return nil, err
	}
	// Data first: a bad file fails before anything is loaded or made.
	data, err := fresh.Load(o.Data, fetchFromHub(e, freshDataName))
	if err != nil {
		return nil, err
	}
	set, err := loadProbeItems(e, o.Items)
	if err != nil {
		return nil, err
	}
	freshRun, err := o.common(e, runfile.TestFresh, data.Dataset)
	if err != nil {
		return nil, err
	}
	probesRun, err := o.common(e, runfile.TestProbes, set.Dataset())
	if err != nil {
		return nil, err
	}
	dir := o.OutDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "udgam-audit-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	threads := e.threads(o.Threads)
	artPath, err := resolveArtifact(e, o.artifact, o.Reference, dir, threads)
	if err != nil {
		return nil, err
	}
	models, closeAll, err := openAuditPair(o.Reference, artPath, threads, o.Window, cpuOnly)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	cmp := compare.NewOptions()
	cmp.Resamples, cmp.Seed = o.Resamples, compare.DefaultSeed
	return audit.Run(e.Ctx, models, audit.Options{
		Fresh:     fresh.RunOptions{RunCommon: freshRun, Data: data, Window: o.Window, Stride: o.Stride},
		Probes:    probes.RunOptions{RunCommon: probesRun, Data: set},
		Dir:       dir,
		Compare:   cmp,
		Limits:    o.limits,
		Quantized: o.artifact.Quantize,
		Progress:  e.Stderr,
	})
}

// cliAudit is the Action's Deps.Audit: the command's options from its
// constructor, set from the request, checked as the command checks them.
func cliAudit(e *env) func(ctx context.Context, req action.AuditRequest) (*audit.Report, error) {
	return func(ctx context.Context, req action.AuditRequest) (*audit.Report, error) {
		ae := *e
		ae.Ctx, ae.Stderr = ctx, e.Stdout // the step's log
		o := newAuditOptions()
		o.Reference, o.Artifact, o.Data, o.Items, o.OutDir = req.Reference, req.Artifact, req.FreshData, req.ProbeItems, req.Dir
		o.Window, o.Stride = req.Window, req.Stride
		o.MaxDegradation, o.Resamples = req.Limits.String(), req.Resamples
		o.set("", req.Settings, req.ModelName, req.ModelRevision, req.Git)
		if err := o.validate(&ae, nil); err != nil {
			return nil, err
		}
		return o.run(&ae)
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
