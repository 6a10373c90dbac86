//go:build cgo

#include <dlfcn.h>
#include <stddef.h>
#include "log.h"
#include "gpu.h"

// A GPU backend library (lib/ollama/libggml-cuda.so) links its own
// libggml-base.so, whose log goes straight to stderr: a CUDA backend that
// finds no device would print its own error there. Opening that copy first
// lets udgam_log_gpu take its log (kept, and shown only when verbose), so
// the user sees one line from udgam-ci instead.
typedef void (*udgam_log_set_fn)(ggml_log_callback, void *);

const char *udgam_open_base(const char *path) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		return dlerror();
	}
	udgam_log_set_fn set = (udgam_log_set_fn)dlsym(h, "ggml_log_set");
	if (set != NULL) {
		set(udgam_log_gpu, NULL);
	}
	return NULL;
}

const char *udgam_try_open(const char *path) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		return dlerror();
	}
	dlclose(h);
	return NULL;
}
