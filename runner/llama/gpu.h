// Opening a GPU backend library's libggml-base.so before ggml loads the
// backend (gpu.go), so the backend's log comes to udgam_log_gpu (log.h).
#ifndef UDGAM_GPU_H
#define UDGAM_GPU_H

// udgam_open_base opens path (a libggml-base.so) for the process's life and
// routes its log to udgam_log_gpu; it returns NULL or dlerror's text.
const char *udgam_open_base(const char *path);

// udgam_try_open says why path cannot be loaded (NULL when it can).
const char *udgam_try_open(const char *path);

#endif
