package evals

import (
	"strings"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/runfile"
)

func shardRun(id string, index, count int, docIDs ...string) *runfile.Run {
	h := testHeader(id)
	h.Shard = &runfile.Shard{Index: index, Count: count}
	h.StartedAt = h.StartedAt.Add(time.Duration(index) * time.Minute)
	h.Runtime.Host = "runner-" + id
	r := &runfile.Run{Header: h}
	for _, d := range docIDs {
		r.Docs = append(r.Docs, runfile.Doc{ID: d, Bytes: 1, Tokens: 1, Bits: 1})
	}
	return r
}

func TestMerge(t *testing.T) {
	t.Parallel()
	runs := []*runfile.Run{shardRun("s2", 2, 2, "b", "d"), shardRun("s1", 1, 2, "a", "c")}
	m, err := Merge(runs)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range m.Docs {
		ids = append(ids, d.ID)
	}
	if strings.Join(ids, ",") != "a,c,b,d" {
		t.Errorf("merged docs %v, want shard 1's then shard 2's", ids)
	}
	if m.Header.Shard != nil || !strings.HasPrefix(m.Header.ID, "merged-") || !m.Header.StartedAt.Equal(runs[1].Header.StartedAt) {
		t.Errorf("merged header: shard %v id %s started %v", m.Header.Shard, m.Header.ID, m.Header.StartedAt)
	}
	again, _ := Merge([]*runfile.Run{runs[1], runs[0]})
	if again.Header.ID != m.Header.ID {
		t.Errorf("merge ids differ by input order: %s vs %s", again.Header.ID, m.Header.ID)
	}
	if err := m.Header.Validate(); err != nil {
		t.Errorf("merged header invalid: %v", err)
	}
}

func TestMergeRefuses(t *testing.T) {
	t.Parallel()
	otherWindow := shardRun("s2", 2, 2, "b")
	otherWindow.Header.Settings.Window = 99
	notShard := shardRun("x", 1, 1, "a")
	notShard.Header.Shard = nil
	tests := []struct {
		name string
		runs []*runfile.Run
		want string
	}{
		{"none", nil, "no runs"},
		{"not a shard", []*runfile.Run{notShard}, "not a shard"},
		{"missing", []*runfile.Run{shardRun("s1", 1, 3, "a"), shardRun("s3", 3, 3, "c")}, "missing shard(s) [2] of 3"},
		{"twice", []*runfile.Run{shardRun("s1", 1, 2, "a"), shardRun("t1", 1, 2, "b")}, "shard 1/2 given twice"},
		{"counts", []*runfile.Run{shardRun("s1", 1, 2, "a"), shardRun("s3", 3, 3, "c")}, "of 2 shards"},
		{"overlap", []*runfile.Run{shardRun("s1", 1, 2, "a", "b"), shardRun("s2", 2, 2, "b")}, "record b is in shard 1/2 and shard 2/2"},
		{"settings", []*runfile.Run{shardRun("s1", 1, 2, "a"), otherWindow}, `differs from shard 1/2 (run s1) in settings`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Merge(tt.runs)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Merge: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
