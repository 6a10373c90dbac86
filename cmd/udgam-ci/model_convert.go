package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/udgamlabs/udgam-ci/convert"
	"github.com/udgamlabs/udgam-ci/fetch"
)

type modelConvertOptions struct {
	Dir       string
	Out       string
	Dtype     string
	Subfolder string
	Force     bool
	// AllowUnverifiedTokenizer converts a tokenizer udgam-ci cannot show to
	// equal the Hugging Face tokenizer; runs of the model say so.
	AllowUnverifiedTokenizer bool
}

func runModelConvert(e *env, args []string) error {
	var o modelConvertOptions
	fs := newFlags(e, "model convert",
		"convert a local Hugging Face checkpoint (config.json, tokenizer, safetensors or pytorch_model.bin weights) to GGUF; supported: "+strings.Join(convert.SupportedClasses(), ", "),
		"udgam-ci model convert ./checkpoint --out model.gguf --dtype f32")
	fs.StringVar(&o.Out, "out", "", "where to write the GGUF")
	fs.StringVar(&o.Dtype, "dtype", convert.DefaultDtype, "tensor type: "+strings.Join(convert.Dtypes, ", "))
	fs.StringVar(&o.Subfolder, "subfolder", "", "the checkpoint's directory inside DIR")
	fs.BoolVar(&o.Force, "force", false, "overwrite OUT if it exists")
	fs.BoolVar(&o.AllowUnverifiedTokenizer, "allow-unverified-tokenizer", false, "convert a tokenizer udgam-ci cannot show to equal the Hugging Face tokenizer, marking every run of the model as unverified")
	var err error
	if o.Dir, err = parseOne(fs, args, "checkpoint directory"); err != nil {
		return err
	}
	if o.Out == "" {
		return usageError{errors.New("--out is required")}
	}
	return modelConvert(e, o)
}

func modelConvert(e *env, o modelConvertOptions) error {
	if err := refuseOverwrite(o.Out, o.Force); err != nil {
		return err
	}
	// The conversion of model fetch and the action (fetch.Convert).
	_, res, err := fetch.Convert(o.Dir, o.Out, convert.Options{Dtype: o.Dtype, Subfolder: o.Subfolder, AllowUnverifiedTokenizer: o.AllowUnverifiedTokenizer})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "%s -> %s (%s %s, %d tensors, sha256 %s; from %s)\n", o.Dir, o.Out, res.Arch, o.Dtype, res.Tensors, res.SHA256, res.Conversion.From)
	for _, line := range res.Tokenizer.Report {
		fmt.Fprintf(e.Stdout, "  %s\n", line)
	}
	if w := res.Conversion.Warning; w != "" {
		fmt.Fprintf(e.Stderr, "warning: %s\n", w)
	}
	return nil
}
