package contamination

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/udgamlabs/udgam-ci/hub"
	"github.com/udgamlabs/udgam-ci/hub/hubtest"
)

const datasetSHA = "0123456789abcdef0123456789abcdef01234567"

func TestHubDatasetStreamsShardByShard(t *testing.T) {
	t.Parallel()
	ps := planted(t)
	ix, _ := NewIndex(ps.items, DefaultN)
	dir := t.TempDir()
	writeJSONL(t, filepath.Join(dir, "a.jsonl"), ps.corpus[:64])
	writeJSONL(t, filepath.Join(dir, "b.jsonl"), ps.corpus[64:])
	a, _ := os.ReadFile(filepath.Join(dir, "a.jsonl"))
	b, _ := os.ReadFile(filepath.Join(dir, "b.jsonl"))
	h := hubtest.New(t)
	h.Add("datasets/acme/corpus", datasetSHA, map[string][]byte{
		"data/train-0.jsonl": a, "data/train-1.jsonl": b, "README.md": []byte("# corpus"), "other/x.jsonl": a,
	}, "data/train-0.jsonl")
	cache := t.TempDir()
	c := hub.New(func(k string) string {
		return map[string]string{"HF_ENDPOINT": h.URL, "UDGAM_CI_CACHE": cache}[k]
	})
	inputs, err := HubInputs(context.Background(), c, "hf://acme/corpus@"+datasetSHA+"/data")
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, in := range inputs {
		paths = append(paths, in.Path)
	}
	want := []string{"hf://datasets/acme/corpus@" + datasetSHA + "/data/train-0.jsonl", "hf://datasets/acme/corpus@" + datasetSHA + "/data/train-1.jsonl"}
	if !reflect.DeepEqual(paths, want) {
		t.Fatalf("inputs %q, want %q", paths, want)
	}
	if n := h.Count("GET /datasets/acme/corpus/resolve"); n != 0 {
		t.Errorf("%d downloads before the scan started", n)
	}
	r, err := Scan(context.Background(), ix, inputs, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := flagged(r); !reflect.DeepEqual(got, slices.Sorted(slices.Values(ps.positive))) {
		t.Errorf("flagged %d, want the 64 planted", len(got))
	}
	for _, it := range r.Items {
		if !strings.HasPrefix(it.First.File, "hf://datasets/acme/corpus@") {
			t.Errorf("%s located in %q", it.ID, it.First.File)
		}
	}
	if _, err := HubInputs(context.Background(), c, "hf://acme/corpus@main"); err == nil || !strings.Contains(err.Error(), "not a commit sha") {
		t.Errorf("unpinned revision: %v", err)
	}
}
