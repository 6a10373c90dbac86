package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/udgamlabs/udgam-ci/ggufspec"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
)

type modelInfoOptions struct {
	Path string
	JSON bool
}

func runModelInfo(e *env, args []string) error {
	var o modelInfoOptions
	fs := newFlags(e, "model info", "print a GGUF model's metadata: architecture, family (transformer, recurrent, hybrid) and layer pattern, size, dtype, tokenizer, BOS, hashes",
		"udgam-ci model info models/smollm2-135m-f32.gguf")
	fs.BoolVar(&o.JSON, "json", false, "print JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{fmt.Errorf("want one model file, got %s", arguments(len(pos)))}
	}
	o.Path = pos[0]
	return modelInfo(e, o)
}

func modelInfo(e *env, o modelInfoOptions) error {
	info, err := runner.ReadInfo(o.Path)
	if err != nil {
		return err
	}
	layout, err := runner.ReadLayout(o.Path)
	if err != nil {
		return err
	}
	if o.JSON {
		enc := json.NewEncoder(e.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			runner.Info
			Layout ggufspec.Layout `json:"layout"`
		}{info, layout})
	}
	w := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "file\t%s\n", info.Path)
	fmt.Fprintf(w, "sha256\t%s\n", info.SHA256)
	fmt.Fprintf(w, "fingerprint\t%s (what can change a score; equal for a renamed copy)\n", info.Fingerprint)
	if info.Name != "" {
		fmt.Fprintf(w, "name\t%s\n", info.Name)
	} else {
		fmt.Fprintf(w, "name\t%s (the GGUF has no general.name: runs record the file's name unless --model-name)\n", info.RunName())
	}
	fmt.Fprintf(w, "architecture\t%s\n", info.Arch)
	fmt.Fprintf(w, "family\t%s\n", layout.Family)
	fmt.Fprintf(w, "layers\t%s\n", layout)
	fmt.Fprintf(w, "parameters\t%d\n", info.Params)
	fmt.Fprintf(w, "dtype\t%s\n", info.Dtype)
	for _, k := range runfile.SortedKeys(info.TensorTypes) {
		fmt.Fprintf(w, "  tensors %s\t%d%s\n", k, info.TensorTypes[k], paramShare(info, k))
	}
	fmt.Fprintf(w, "context length\t%d\n", info.ContextLength)
	fmt.Fprintf(w, "vocabulary\t%d (%s)\n", info.VocabSize, info.TokenizerModel)
	fmt.Fprintf(w, "tokenizer sha256\t%s\n", info.TokenizerSHA256)
	fmt.Fprintf(w, "bos / eos\t%d / %d (add_bos_token %v)\n", info.BOS, info.EOS, info.AddBOS)
	return w.Flush()
}

// paramShare is the part of the parameters held in tensor type k, as
// model info prints it beside the type's tensor count.
func paramShare(info runner.Info, k string) string {
	if info.Params == 0 {
		return ""
	}
	return fmt.Sprintf(" (%.1f%% of parameters)", 100*float64(info.TensorParams[k])/float64(info.Params))
}
