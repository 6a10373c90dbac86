package convert

import (
	"fmt"
	"io/fs"

	"github.com/udgamlabs/udgam-ci/convert/tokenizer"
	"github.com/udgamlabs/udgam-ci/ggufspec/tokspec"
)

// convertTokenizer is the pipeline's one tokenizer step
// (convert/tokenizer): the tokenizer.* key-values, padded to
// config.json's vocab_size, and the record of how text must be prepared
// (tokspec.Key), which the scoring side reads back.
func convertTokenizer(fsys fs.FS, vocabSize int, allowUnverified bool) (*tokenizer.Result, KV, error) {
	res, err := tokenizer.Convert(fsys, tokenizer.Options{AllowUnverified: allowUnverified, VocabSize: vocabSize})
	if err != nil {
		return nil, nil, fmt.Errorf("convert tokenizer: %w", err)
	}
	spec, err := res.Spec.Encode()
	if err != nil {
		return nil, nil, err
	}
	kv := KV{tokspec.Key: spec}
	for k, v := range res.KV {
		kv[k] = v
	}
	return res, kv, nil
}
