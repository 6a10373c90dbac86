package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/udgamlabs/udgam-ci/convert"
	"github.com/udgamlabs/udgam-ci/fetch"
	"github.com/udgamlabs/udgam-ci/hub"
)

type modelFetchOptions struct {
	Repo          string
	Revision      string
	AllowUnpinned bool
	Dtype         string
	Out           string
	CacheDir      string
	Subfolder     string
	// AllowUnverifiedTokenizer: see model convert.
	AllowUnverifiedTokenizer bool
}

func runModelFetch(e *env, args []string) error {
	var o modelFetchOptions
	fs := newFlags(e, "model fetch",
		"download a model from the Hugging Face hub at a pinned commit as GGUF: a GGUF of the type when the repository has one, else its checkpoint (safetensors or pytorch_model.bin, refused before download when the architecture is not supported) converted (cached by repository, commit and type; HF_TOKEN and HF_ENDPOINT are honoured)",
		"udgam-ci model fetch HuggingFaceTB/SmolLM2-135M --revision <commit-sha> --dtype f32 --out smollm2-135m.gguf")
	fs.StringVar(&o.Revision, "revision", "", "commit sha (40 hex) of the model repository")
	fs.BoolVar(&o.AllowUnpinned, "allow-unpinned", false, "accept a branch or tag for --revision and resolve it to its commit")
	fs.StringVar(&o.Dtype, "dtype", convert.DefaultDtype, "tensor type: "+strings.Join(convert.Dtypes, ", "))
	fs.StringVar(&o.Out, "out", "", "where to write the GGUF")
	fs.BoolVar(&o.AllowUnverifiedTokenizer, "allow-unverified-tokenizer", false, "convert a tokenizer udgam-ci cannot show to equal the Hugging Face tokenizer, marking every run of the model as unverified")
	fs.StringVar(&o.Subfolder, "subfolder", "", "the checkpoint's directory in the repository, when it is not at the top level")
	fs.StringVar(&o.CacheDir, "cache-dir", "", "cache of converted models (default: under the hub cache, UDGAM_CI_CACHE)")
	var err error
	if o.Repo, err = parseOne(fs, args, "repository, OWNER/NAME"); err != nil {
		return err
	}
	if o.Out == "" {
		return usageError{errors.New("--out is required")}
	}
	if o.Revision == "" {
		return usageError{errors.New("--revision is required (a commit sha)")}
	}
	return modelFetch(e, o)
}

func modelFetch(e *env, o modelFetchOptions) error {
	client := hub.New(e.Getenv)
	client.Progress = e.Stderr
	if o.CacheDir == "" {
		o.CacheDir = filepath.Join(client.CacheDir, "converted")
	}
	m, err := fetch.Fetch(e.Ctx, client, fetch.Options{
		Repo: o.Repo, Revision: o.Revision, AllowUnpinned: o.AllowUnpinned, Dtype: o.Dtype, CacheDir: o.CacheDir, Subfolder: o.Subfolder,
		AllowUnverifiedTokenizer: o.AllowUnverifiedTokenizer,
	})
	if err != nil {
		return err
	}
	if err := fetch.CopyTo(m, o.Out); err != nil {
		return err
	}
	how := "downloaded " + m.Model.File
	if c := m.Model.Conversion; c != nil {
		how = "converted from " + c.From + " by " + c.Tool
	}
	fmt.Fprintf(e.Stdout, "%s@%s -> %s (%s, sha256 %s; %s)\n", o.Repo, m.Model.Revision, o.Out, m.Model.Dtype, m.Model.SHA256, how)
	if c := m.Model.Conversion; c != nil && c.Warning != "" {
		fmt.Fprintf(e.Stderr, "warning: %s\n", c.Warning)
	}
	return nil
}
