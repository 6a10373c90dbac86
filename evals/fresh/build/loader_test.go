package build

import (
	"testing"

	"github.com/udgamlabs/udgam-ci/evals/fresh"
)

// TestOutputLoadsAsFreshText checks the contract with the scorer: what the
// builder writes is a valid Fresh Text document file, row for row.
func TestOutputLoadsAsFreshText(t *testing.T) {
	t.Parallel()
	data, err := fresh.LoadFile("testdata/golden.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(data.Docs) != 6 {
		t.Fatalf("%d documents, want 6", len(data.Docs))
	}
	for _, d := range data.Docs {
		if d.Source == "" || d.URL == "" || d.License == "" || d.Date == "" {
			t.Errorf("%s: source, url, license or date lost: %+v", d.ID, d)
		}
	}
}
