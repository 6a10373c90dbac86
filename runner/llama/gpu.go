package llama

/*
#cgo linux LDFLAGS: -ldl
#include <stdlib.h>
#include "ggml-backend.h"
#include "gpu.h"
*/
import "C"

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"unsafe"
)

// GPUReport says what this process offloads to: the GPU devices llama.cpp
// sees, and, where a GPU backend library is installed but gives none, why
// scoring stays on the CPU.
type GPUReport struct {
	// Devices are the GPU devices, "CUDA0: NVIDIA H100 80GB HBM3".
	Devices []string
	// Libraries are the GPU backend libraries found in the search path.
	Libraries []string
	// Fallback, when not empty, is one sentence for people: a GPU library
	// is installed, no GPU device is used, and every layer stays on the
	// CPU (with the CPU build's results).
	Fallback string
}

// GPUs loads the GPU backends (once per process, as Load does) and reports
// them.
func GPUs() GPUReport {
	log := newEngineLog(false, nil)
	defer log.free()
	backendInit(log)
	return gpuReport
}

var gpuReport GPUReport

// libDirs are the folders ggml.OnceLoad searches for backend libraries:
// OLLAMA_LIBRARY_PATH's list, else lib/ollama beside the executable's bin/
// (the same rule, so the libggml-base.so opened here is the one the GPU
// backend links).
func libDirs() []string {
	if p, ok := os.LookupEnv("OLLAMA_LIBRARY_PATH"); ok {
		return filepath.SplitList(p)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	if runtime.GOOS == "darwin" {
		return []string{filepath.Dir(exe)}
	}
	return []string{filepath.Join(filepath.Dir(exe), "..", "lib", "ollama")}
}

// gpuLibraries lists the GPU backend libraries in dirs: every
// libggml-NAME*.so but ggml's base and CPU libraries.
func gpuLibraries(dirs []string) []string {
	var libs []string
	for _, d := range dirs {
		found, _ := filepath.Glob(filepath.Join(d, "libggml-*.so"))
		for _, f := range found {
			name := filepath.Base(f)
			if strings.HasPrefix(name, "libggml-base") || strings.HasPrefix(name, "libggml-cpu") {
				continue
			}
			libs = append(libs, f)
		}
	}
	return libs
}

// openGPUBase opens the libggml-base.so beside the GPU libraries before
// ggml loads them, so their log comes to udgam_log_gpu (gpu.c, log.c).
func openGPUBase(dirs []string) {
	for _, d := range dirs {
		base := filepath.Join(d, "libggml-base.so")
		if _, err := os.Stat(base); err != nil {
			continue
		}
		cpath := C.CString(base)
		C.udgam_open_base(cpath) // a failure shows again when the GPU library is tried
		C.free(unsafe.Pointer(cpath))
		return
	}
}

// reportGPUs reads the devices ggml registered after loading the
// libraries libs, whose warnings and errors were libErr.
func reportGPUs(libs []string, libErr string) GPUReport {
	r := GPUReport{Libraries: libs}
	for i := range C.ggml_backend_dev_count() {
		dev := C.ggml_backend_dev_get(i)
		if t := C.ggml_backend_dev_type(dev); t != C.GGML_BACKEND_DEVICE_TYPE_GPU && t != C.GGML_BACKEND_DEVICE_TYPE_IGPU {
			continue
		}
		r.Devices = append(r.Devices, C.GoString(C.ggml_backend_dev_name(dev))+": "+C.GoString(C.ggml_backend_dev_description(dev)))
	}
	if len(r.Devices) > 0 || len(libs) == 0 {
		return r
	}
	var why []string
	for _, lib := range libs {
		cpath := C.CString(lib)
		msg := C.udgam_try_open(cpath)
		C.free(unsafe.Pointer(cpath))
		if msg != nil {
			why = append(why, fmt.Sprintf("%s could not be loaded (%s)", lib, strings.TrimPrefix(C.GoString(msg), lib+": ")))
		}
	}
	if len(why) == 0 {
		// Loaded, but its device count is zero: ggml's own error says why.
		reason := libErr
		if reason == "" {
			reason = "it reports no device"
		} else if i := strings.LastIndex(reason, ": "); i >= 0 {
			reason = reason[i+2:] // "ggml_cuda_init: failed to initialize CUDA: <the runtime's error>"
		}
		why = append(why, fmt.Sprintf("%s found no GPU (%s)", strings.Join(libs, ", "), reason))
	}
	r.Fallback = strings.Join(why, "; ") + "; scoring on the CPU, with the CPU build's results"
	return r
}
