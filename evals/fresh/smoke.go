package fresh

import (
	_ "embed"
)

// smokeJSONL is the embedded smoke sample: documents written for udgam-ci,
// CC0 1.0 (see smoke/README.md).
//
//go:embed smoke/smoke.jsonl
var smokeJSONL []byte

// SmokeName labels the smoke sample in every header and summary, so it is
// never taken for the benchmark.
const SmokeName = "udgam-ci fresh smoke sample (not the benchmark)"

// Smoke returns the embedded smoke sample, validated like any file.
func Smoke() (*Data, error) {
	docs, err := parseJSONL(smokeJSONL, "embedded smoke sample")
	if err != nil {
		return nil, err
	}
	d := newData(docs, SmokeName, smokeJSONL)
	d.Dataset.Revision = "embedded"
	d.Dataset.Smoke = true
	return d, nil
}
