package evals

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/udgamlabs/udgam-ci/ggufspec"
	"github.com/udgamlabs/udgam-ci/runfile"
	"github.com/udgamlabs/udgam-ci/runner"
)

func TestResolveBOS(t *testing.T) {
	t.Parallel()
	with := runner.Info{BOS: 1}
	without := runner.Info{BOS: -1, Path: "m.gguf"}
	tests := []struct {
		mode    string
		info    runner.Info
		want    bool
		wantErr string
	}{
		{"auto", with, true, ""},
		{"", with, true, ""},
		{"auto", without, false, ""},
		{"yes", with, true, ""},
		{"yes", without, false, "m.gguf has no BOS token"},
		{"no", with, false, ""},
		{"no", without, false, ""},
		{"maybe", with, false, `BOS mode "maybe"`},
	}
	for _, tt := range tests {
		got, err := ResolveBOS(tt.mode, tt.info)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ResolveBOS(%q, bos=%d) error = %v, want one containing %q", tt.mode, tt.info.BOS, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ResolveBOS(%q, bos=%d) = %v, %v; want %v", tt.mode, tt.info.BOS, got, err, tt.want)
		}
	}
}

func TestNewHeader(t *testing.T) {
	t.Parallel()
	info := runner.Info{
		Path: "/models/tiny.gguf", SHA256: "aa", Name: "Tiny", Arch: "llama", Params: 1234,
		Dtype: "F16", BOS: 1, TokenizerSHA256: "bb",
	}
	at := time.Date(2026, 11, 30, 14, 0, 0, 0, time.FixedZone("X", 3600))
	opt := HeaderOptions{
		ModelRevision: "rev1",
		Dataset:       runfile.Dataset{Name: "smoke", SHA256: "cc", Count: 3, Smoke: true},
		BOSMode:       "auto",
		Window:        2048,
		Stride:        1024,
		Formulation:   "f1",
		Runtime:       runfile.Runtime{Threads: 2},
		Shard:         &runfile.Shard{Index: 1, Count: 2},
		Git:           runfile.Git{Repo: "o/r"},
		Now:           func() time.Time { return at },
		Rand:          bytes.NewReader([]byte{1, 2, 3, 4, 5, 6, 7, 8}),
	}
	h, err := NewHeader(runfile.TestFresh, info, opt)
	if err != nil {
		t.Fatal(err)
	}
	want := runfile.Header{
		Schema:  runfile.Schema,
		ID:      "20261130T130000Z-0102030405060708",
		Test:    "fresh",
		Model:   runfile.Model{Name: "Tiny", Revision: "rev1", File: "tiny.gguf", SHA256: "aa", Arch: "llama", Params: 1234, Dtype: "F16"},
		Dataset: runfile.Dataset{Name: "smoke", SHA256: "cc", Count: 3, Smoke: true},
		Settings: runfile.Settings{
			AddBOS: true, BOSMode: "auto", BOSID: 1, Window: 2048, Stride: 1024, Dtype: "F16",
			TokenizerSHA256: "bb", Engine: ggufspec.EngineVersion(), Formulation: "f1", Template: runfile.TemplateNone,
		},
		Runtime:   runfile.Runtime{Threads: 2},
		Git:       runfile.Git{Repo: "o/r"},
		Shard:     &runfile.Shard{Index: 1, Count: 2},
		StartedAt: at.UTC(),
	}
	if compact(h) != compact(want) {
		t.Errorf("header\n got %s\nwant %s", compact(h), compact(want))
	}

	info.BOS = -1
	opt.BOSMode = "yes"
	if _, err := NewHeader(runfile.TestFresh, info, opt); err == nil {
		t.Error("NewHeader with --add-bos yes and no BOS token: no error")
	}
}

func TestNewRunIDUnique(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a, err := NewRunID(at, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewRunID(at, nil)
	if a == b || !strings.HasPrefix(a, "20260102T030405Z-") || len(a) != len("20260102T030405Z-")+16 {
		t.Errorf("run ids %q and %q: want distinct ids with the time prefix and 16 hex digits", a, b)
	}
	if _, err := NewRunID(at, bytes.NewReader([]byte{1})); err == nil {
		t.Error("short randomness: no error")
	}
}
