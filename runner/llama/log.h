// Where llama.cpp's log goes (log.go). llama.cpp and ggml keep one log
// callback each for the whole process, and so does a GPU backend's own
// libggml-base.so (gpu.c): the callbacks here hand every line to the sink
// of the call in progress on the thread that logs it, so each model (or
// quantization, or the backends' loading) keeps its own errors and its own
// verbosity. llama.cpp logs on the thread that called it.
#ifndef UDGAM_LOG_H
#define UDGAM_LOG_H

#include "ggml.h"

// udgam_log is one owner's sink. Go allocates it, fills it with
// udgam_log_reset and frees it; between udgam_log_begin and udgam_log_end
// it receives the lines logged on that thread.
struct udgam_log {
	int fd;         // every line is written here; -1 for none (not verbose)
	char err[2048]; // the engine's warnings and errors since the call began
	char gpu[1024]; // those of a GPU backend library (gpu.c)
};

// udgam_log_reset makes l a sink writing every line to fd (-1: none) with
// no text kept.
void udgam_log_reset(struct udgam_log *l, int fd);

// udgam_log_install routes llama.cpp's and ggml's log to the thread's
// sink. Lines logged where no call has begun are dropped.
void udgam_log_install(void);

// udgam_log_begin empties l's text and makes it this thread's sink until
// udgam_log_end(the value it returns), which restores the sink before it.
struct udgam_log *udgam_log_begin(struct udgam_log *l);
void udgam_log_end(struct udgam_log *prev);

// udgam_log_gpu is the callback a GPU backend's libggml-base.so logs
// through: its warnings and errors go to the sink's gpu text.
void udgam_log_gpu(enum ggml_log_level level, const char *text, void *unused);

#endif
