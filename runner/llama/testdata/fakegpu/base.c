// A stand-in for the libggml-base.so a GPU backend links: ggml_log_set as
// ggml has it, and one function the backend logs through.
#include <stdio.h>

typedef void (*log_cb)(int level, const char *text, void *user_data);
static log_cb cb;
static void *cb_data;

void ggml_log_set(log_cb c, void *user_data) {
	cb = c;
	cb_data = user_data;
}

// fake_log_error logs at GGML_LOG_LEVEL_ERROR (4), to stderr when no
// callback is set, as ggml's default does.
void fake_log_error(const char *text) {
	if (cb != NULL) {
		cb(4, text, cb_data);
	} else {
		fputs(text, stderr);
	}
}
