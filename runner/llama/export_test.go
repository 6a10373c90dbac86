package llama

// SetGELUCheck replaces ExactGELU, as Load consults it, until restore is
// called, so a test can see what a binary with ggml's float16 GELU table
// does without being one.
func SetGELUCheck(check func() error) (restore func()) {
	old := geluCheck
	geluCheck = check
	return func() { geluCheck = old }
}

// SetRopeCheck replaces ExactRope, as Load consults it, until restore is
// called, so a test can see what a binary with ggml's float32 rope angles
// does without being one.
func SetRopeCheck(check func() error) (restore func()) {
	old := ropeCheck
	ropeCheck = check
	return func() { ropeCheck = old }
}

// SetCPUFeatures replaces CPUFeatures, as Load consults it, until restore
// is called, so a test can see what a binary carried to an older CPU does.
func SetCPUFeatures(f func() (missing, unused []string)) (restore func()) {
	old := cpuFeatures
	cpuFeatures = f
	return func() { cpuFeatures = old }
}
