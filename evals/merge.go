package evals

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"

	"github.com/udgamlabs/udgam-ci/runfile"
)

// Merge joins the shard files of one run into a whole run. It refuses
// runs that are not shards, headers that differ in anything but the run
// id, the shard, the start time and the runtime (threads, host: these do
// not change results), a shard given twice or missing, and a record id in
// two shards. The merged header drops the shard, starts at the earliest
// shard's start and gets an id made from the shards' ids, so merging the
// same files twice gives the same file.
func Merge(runs []*runfile.Run) (*runfile.Run, error) {
	if len(runs) == 0 {
		return nil, errors.New("merge: no runs given")
	}
	byIndex := map[int]*runfile.Run{}
	count := 0
	for _, r := range runs {
		s := r.Header.Shard
		if s == nil {
			return nil, fmt.Errorf("merge: run %s is not a shard (it was scored without --shard)", r.Header.ID)
		}
		if count == 0 {
			count = s.Count
		}
		if s.Count != count {
			return nil, fmt.Errorf("merge: run %s is shard %d/%d but run %s is of %d shards", r.Header.ID, s.Index, s.Count, runs[0].Header.ID, count)
		}
		if prev, ok := byIndex[s.Index]; ok {
			return nil, fmt.Errorf("merge: shard %d/%d given twice (runs %s and %s)", s.Index, count, prev.Header.ID, r.Header.ID)
		}
		byIndex[s.Index] = r
	}
	var missing []int
	for i := 1; i <= count; i++ {
		if byIndex[i] == nil {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("merge: missing shard(s) %v of %d", missing, count)
	}

	first := byIndex[1]
	out := &runfile.Run{Header: first.Header}
	out.Header.Shard = nil
	if s := out.Header.Sequential; s != nil {
		// Each shard stopped on its own; compare replays the merged records
		// in the seeded order up to the first one missing.
		merged := *s
		merged.Stop = nil
		out.Header.Sequential = &merged
	}
	owner := map[string]int{}
	ids := make([]string, 0, count)
	for i := 1; i <= count; i++ {
		r := byIndex[i]
		if diff := headerDiff(first.Header, r.Header); diff != "" {
			return nil, fmt.Errorf("merge: shard %d/%d (run %s) differs from shard 1/%d (run %s) in %s", i, count, r.Header.ID, count, first.Header.ID, diff)
		}
		if r.Header.StartedAt.Before(out.Header.StartedAt) {
			out.Header.StartedAt = r.Header.StartedAt
		}
		ids = append(ids, r.Header.ID)
		for _, id := range r.IDs() {
			if prev, ok := owner[id]; ok {
				return nil, fmt.Errorf("merge: record %s is in shard %d/%d and shard %d/%d", id, prev, count, i, count)
			}
			owner[id] = i
		}
		out.Docs = append(out.Docs, r.Docs...)
		out.Items = append(out.Items, r.Items...)
		out.Variants = append(out.Variants, r.Variants...)
	}
	out.Header.ID = mergedID(ids)
	return out, nil
}

// headerDiff names the first part of b's header that differs from a's,
// ignoring what may differ between shards; "" when none does.
func headerDiff(a, b runfile.Header) string {
	parts := []struct {
		name string
		x, y any
	}{
		{"schema", a.Schema, b.Schema},
		{"test", a.Test, b.Test},
		{"model", a.Model, b.Model},
		{"dataset", a.Dataset, b.Dataset},
		{"settings", a.Settings, b.Settings},
		{"git", a.Git, b.Git},
		{"sample", a.Sample, b.Sample},
		// sequential shards share the order and the rule; each stops on its own
		{"sequential", runfile.SequentialKey(a.Sequential), runfile.SequentialKey(b.Sequential)},
	}
	for _, p := range parts {
		if !reflect.DeepEqual(p.x, p.y) {
			return fmt.Sprintf("%s: %s vs %s", p.name, compact(p.x), compact(p.y))
		}
	}
	return ""
}

func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// mergedID derives the merged run's id from its shards' ids.
func mergedID(shardIDs []string) string {
	sorted := append([]string(nil), shardIDs...)
	sort.Strings(sorted)
	h := sha256.New()
	for _, id := range sorted {
		h.Write([]byte(id))
		h.Write([]byte{0})
	}
	return "merged-" + hex.EncodeToString(h.Sum(nil)[:8])
}
