// Command fallbackmodel writes the model scripts/cuda/fallback.sh scores
// with and without the CUDA backend: a random-weight transformer with the
// Llama architecture (testmodel.DefaultShape: two layers, byte tokens), so
// attention, whose kernel depends on whether layers go to a GPU, is part of
// what must come out the same.
//
//	go run ./scripts/cuda/fallbackmodel -out model.gguf
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/udgamlabs/udgam-ci/reference/testmodel"
)

func main() {
	out := flag.String("out", "", "the GGUF file to write")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: fallbackmodel -out FILE")
		os.Exit(2)
	}
	m, err := testmodel.RandomLlama(42, testmodel.DefaultShape())
	if err == nil {
		err = testmodel.WriteLlamaGGUF(*out, m, testmodel.WithName("cuda-fallback"))
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "fallbackmodel: write %s: %v\n", *out, err)
		os.Exit(1)
	}
}
