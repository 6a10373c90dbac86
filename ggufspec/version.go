package ggufspec

// ollamaVersion is go.mod's requirement and llamaCommit the llama.cpp that
// module vendors (its Makefile.sync): TestEngineVersion checks both.
const (
	ollamaVersion = "v0.17.4"
	llamaCommit   = "ec98e2002"
)

// EngineVersion names the scoring engine. It is a judged setting: runs made
// with different engines are not compared silently.
func EngineVersion() string {
	return "llama.cpp " + llamaCommit + " (ollama " + ollamaVersion + ")"
}
