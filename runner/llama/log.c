//go:build cgo

#include <string.h>
#include <stdio.h>
#include <unistd.h>
#include "llama.h"
#include "log.h"

// The sink of the call in progress on this thread (NULL between calls).
static _Thread_local struct udgam_log *udgam_log_current;

void udgam_log_reset(struct udgam_log *l, int fd) {
	l->fd = fd;
	l->err[0] = 0;
	l->gpu[0] = 0;
}

struct udgam_log *udgam_log_begin(struct udgam_log *l) {
	struct udgam_log *prev = udgam_log_current;
	l->err[0] = 0;
	l->gpu[0] = 0;
	udgam_log_current = l;
	return prev;
}

void udgam_log_end(struct udgam_log *prev) { udgam_log_current = prev; }

// udgam_log_line writes text where the thread's sink writes every line,
// and returns that sink when the line is a warning or an error to keep
// (NULL otherwise, or where no call has begun on this thread).
static struct udgam_log *udgam_log_line(enum ggml_log_level level, const char *text) {
	struct udgam_log *l = udgam_log_current;
	if (l == NULL) {
		return NULL;
	}
	if (l->fd >= 0) {
		ssize_t n = write(l->fd, text, strlen(text));
		(void)n; // a lost debugging line is not worth failing the call
	}
	return level == GGML_LOG_LEVEL_ERROR || level == GGML_LOG_LEVEL_WARN ? l : NULL;
}

// udgam_log_engine keeps the engine's warnings and errors, so a failed
// call can say why in a Go error: when they overflow the buffer, the
// latest are kept.
static void udgam_log_engine(enum ggml_log_level level, const char *text, void *unused) {
	(void)unused;
	struct udgam_log *l = udgam_log_line(level, text);
	if (l == NULL) {
		return;
	}
	size_t n = strlen(l->err), m = strlen(text);
	if (n + m >= sizeof(l->err)) {
		n = 0;
	}
	if (m > sizeof(l->err) - 1) {
		m = sizeof(l->err) - 1;
	}
	memcpy(l->err + n, text, m);
	l->err[n + m] = 0;
}

// udgam_log_gpu keeps a GPU library's first warnings and errors: the GPU
// report names the reason a backend gave no device.
void udgam_log_gpu(enum ggml_log_level level, const char *text, void *unused) {
	(void)unused;
	struct udgam_log *l = udgam_log_line(level, text);
	if (l != NULL) {
		size_t n = strlen(l->gpu);
		snprintf(l->gpu + n, sizeof(l->gpu) - n, "%s", text);
	}
}

void udgam_log_install(void) { llama_log_set(udgam_log_engine, NULL); }
