package llama

/*
#cgo CXXFLAGS: -std=c++17
#include <stdlib.h>
#include "llama.h"
*/
import "C"

import (
	_ "github.com/ollama/ollama/llama/llama.cpp/src"
	_ "github.com/ollama/ollama/ml/backend/ggml/ggml/src"
)

func backendInit() { C.llama_backend_init() }
