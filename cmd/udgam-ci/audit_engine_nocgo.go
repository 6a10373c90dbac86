//go:build !cgo

package main

import (
	"fmt"

	"github.com/udgamlabs/udgam-ci/evals/audit"
)

func engineQuantize(in, _, _ string, _ int) error {
	return fmt.Errorf("quantize %s: %w", in, errNoEngine)
}

func openAuditPair(ref, _ string, _, _ int, _ bool) (audit.Models, func(), error) {
	return audit.Models{}, nil, fmt.Errorf("model %s: %w", ref, errNoEngine)
}
