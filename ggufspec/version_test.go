package ggufspec

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// The engine's name follows the module that is linked: go.mod's ollama
// requirement and the llama.cpp commit that module vendors.
func TestEngineVersion(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-m", "-json", "github.com/ollama/ollama").Output()
	if err != nil {
		t.Fatalf("go list -m github.com/ollama/ollama: %v", err)
	}
	var m struct {
		Version, Dir string
		Replace      *struct{ Dir string }
	}
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	if m.Version != ollamaVersion {
		t.Errorf("go.mod requires ollama %s, EngineVersion says %s", m.Version, ollamaVersion)
	}
	dir := m.Dir
	if m.Replace != nil && m.Replace.Dir != "" {
		dir = m.Replace.Dir // the Makefile's engine copy
	}
	sync, err := os.ReadFile(filepath.Join(dir, "Makefile.sync"))
	if err != nil {
		t.Fatal(err)
	}
	head := regexp.MustCompile(`(?m)^FETCH_HEAD=(\S+)$`).FindSubmatch(sync)
	if head == nil {
		t.Fatalf("%s/Makefile.sync names no FETCH_HEAD", dir)
	}
	if string(head[1]) != llamaCommit {
		t.Errorf("ollama %s vendors llama.cpp %s, EngineVersion says %s", m.Version, head[1], llamaCommit)
	}
}
