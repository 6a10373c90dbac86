package llama

// SetGELUCheck replaces ExactGELU, as Load consults it, until restore is
// called, so a test can see what a binary with ggml's float16 GELU table
// does without being one.
func SetGELUCheck(check func() error) (restore func()) {
	old := geluCheck
	geluCheck = check
	return func() { geluCheck = old }
}
