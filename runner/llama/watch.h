// The kernel watch (watch.go): an eval callback that notes which inexact
// kernels a context's graphs apply, without touching their data.
#ifndef UDGAM_WATCH_H
#define UDGAM_WATCH_H

#include "llama.h"

enum { UDGAM_WATCH_GELU = 1, UDGAM_WATCH_ROPE = 2 };

// udgam_watch: which inexact kernels to look for, and which a graph used.
struct udgam_watch {
	int want;
	int seen;
};

// udgam_watch_new installs a watch for want (UDGAM_WATCH_ flags) on the
// context parameters p; NULL if it cannot be allocated. free() frees it.
struct udgam_watch *udgam_watch_new(struct llama_context_params *p, int want);

#endif
