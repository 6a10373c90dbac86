package runner

// ollamaVersion must follow go.mod: it names the llama.cpp that is linked.
const (
	ollamaVersion = "v0.17.4"
	llamaCommit   = "ec98e2002"
)

// EngineVersion names the scoring engine. It is a judged setting: runs made
// with different engines are not compared silently.
func EngineVersion() string {
	return "llama.cpp " + llamaCommit + " (ollama " + ollamaVersion + ")"
}
