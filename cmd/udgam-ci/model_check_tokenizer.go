package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/udgamlabs/udgam-ci/convert"
	"github.com/udgamlabs/udgam-ci/fetch"
	"github.com/udgamlabs/udgam-ci/runner/hftok"
	"github.com/udgamlabs/udgam-ci/runner/textprep"
	"github.com/udgamlabs/udgam-ci/runner/tokcheck"
)

type checkTokenizerOptions struct {
	Model     string // checkpoint directory or GGUF file
	Text      string // --text FILE: one more text
	OnlyText  bool   // --only-text: the file's text alone, not the built-in set
	Tokenizer string // --tokenizer FILE: tokenizer.json for a GGUF
	// Reference is what the ids are compared with: "hftok" (runner/hftok,
	// built in) or "python" (Hugging Face tokenizers run by Python).
	Reference string
	Python    string // --python: the interpreter for --reference python
	JSON      bool
	// AllowUnverifiedTokenizer converts a DIR whose tokenizer udgam-ci
	// cannot show to be exact, to see how it differs.
	AllowUnverifiedTokenizer bool
}

func runModelCheckTokenizer(e *env, args []string) error {
	var o checkTokenizerOptions
	fs := newFlags(e, "model check-tokenizer",
		"tokenize a built-in multilingual text set (and --text FILE) the way scoring does (GGUF, text preparation, llama.cpp; a checkpoint directory is converted first) and compare the ids with a second, Go reading of the checkpoint's tokenizer.json (--reference python: Hugging Face's own tokenizers), reporting each differing text's first difference; exits 1 on any",
		"udgam-ci model check-tokenizer ./checkpoint --text sample.txt")
	fs.StringVar(&o.Text, "text", "", "also check this file's whole content as one text")
	fs.BoolVar(&o.OnlyText, "only-text", false, "with --text: check that file's text alone, without the built-in set")
	fs.StringVar(&o.Tokenizer, "tokenizer", "", "tokenizer.json to compare a GGUF with (a checkpoint directory's own is used)")
	fs.StringVar(&o.Reference, "reference", "hftok", "what to compare with: hftok (udgam-ci's Go reading of tokenizer.json: its own pre-tokenizers and models, the scoring path's normalizers and added-token matching) or python (Hugging Face tokenizers itself, which must be importable by --python)")
	fs.StringVar(&o.Python, "python", "python3", "the Python interpreter for --reference python")
	fs.BoolVar(&o.JSON, "json", false, "print the result as one JSON object")
	fs.BoolVar(&o.AllowUnverifiedTokenizer, "allow-unverified-tokenizer", false, "convert a checkpoint whose tokenizer conversion is not verified, to see where it differs")
	var err error
	if o.Model, err = parseOne(fs, args, "checkpoint directory or GGUF file"); err != nil {
		return err
	}
	return checkTokenizer(e, o)
}

func checkTokenizer(e *env, o checkTokenizerOptions) error {
	if o.Reference != "hftok" && o.Reference != "python" {
		return fmt.Errorf("--reference %q: want hftok or python", o.Reference)
	}
	texts := tokcheck.Texts()
	if o.OnlyText {
		if o.Text == "" {
			return errors.New("--only-text needs --text FILE")
		}
		texts = nil
	}
	if o.Text != "" {
		b, err := os.ReadFile(o.Text)
		if err != nil {
			return fmt.Errorf("--text: %w", err)
		}
		texts = append(texts, string(b))
	}
	gguf, refPath := o.Model, o.Tokenizer
	if st, err := os.Stat(o.Model); err == nil && st.IsDir() {
		if refPath == "" {
			if _, err := os.Stat(filepath.Join(o.Model, "tokenizer.json")); err == nil {
				refPath = filepath.Join(o.Model, "tokenizer.json")
			}
		}
		tmp, err := os.MkdirTemp("", "udgam-check-tokenizer-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		gguf = filepath.Join(tmp, "model.gguf")
		// The conversion model convert, model fetch and the action do; the
		// weights' type does not touch the tokenizer.
		_, res, err := fetch.Convert(o.Model, gguf, convert.Options{Dtype: "f16", AllowUnverifiedTokenizer: o.AllowUnverifiedTokenizer})
		if err != nil {
			return err
		}
		if !o.JSON {
			for _, line := range res.Tokenizer.Report {
				fmt.Fprintf(e.Stdout, "  %s\n", line)
			}
		}
	}
	var ref tokcheck.Tokenizer
	refName := ""
	switch {
	case refPath == "" && o.Reference == "python":
		return fmt.Errorf("--reference python: no tokenizer.json to give it (give --tokenizer FILE)")
	case refPath == "":
	case o.Reference == "python":
		version, ids, err := tokcheck.Python{Path: o.Python}.Encode(context.Background(), refPath, texts)
		if err != nil {
			return err
		}
		ref, refName = tokcheck.Fixed(texts, ids), "Hugging Face tokenizers "+version
	default:
		b, err := os.ReadFile(refPath)
		if err != nil {
			return fmt.Errorf("--tokenizer: %w", err)
		}
		t, err := hftok.Parse(b)
		if err != nil {
			return fmt.Errorf("%s: the Go reading of tokenizer.json cannot compare: %w", refPath, err)
		}
		ref = t.Encode
	}
	m, err := loadEngine(gguf, engineOptions{Threads: 1, Context: 64, Batch: 64, Parallel: 1, CPUOnly: true})
	if err != nil {
		return err
	}
	w, err := textprep.WrapModel(m)
	if err != nil {
		m.Close()
		return fmt.Errorf("model %s: %w", o.Model, err)
	}
	defer w.Close()
	piece := func(id int32) string {
		b, err := w.TokenBytes(id)
		if err != nil {
			return "?"
		}
		return string(b)
	}
	res := tokcheck.Check(texts, w.Tokenize, ref, piece)
	res.Reference = refName
	tp := w.TextPrep()
	if o.JSON {
		out := struct {
			Model    string `json:"model"`
			TextPrep string `json:"text_prep"`
			tokcheck.Result
		}{o.Model, tp.String(), res}
		if err := json.NewEncoder(e.Stdout).Encode(out); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(e.Stdout, "%s: text preparation %s\n", o.Model, tp.String())
		if err := res.WriteText(e.Stdout); err != nil {
			return err
		}
	}
	if !res.OK() {
		return exitCode(1)
	}
	return nil
}
