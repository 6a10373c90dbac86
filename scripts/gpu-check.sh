#!/usr/bin/env bash
# gpu-check.sh BUNDLE OUT: every GPU check and measurement of issue 42 in one
# call, on a bare GPU machine that has the repository's copy and BUNDLE
# (make gpu-bundle: bin/udgam-ci, the runner/llama test binary, gpudata,
# ggml's sources and, when make cuda built it here, lib/ollama's CUDA
# backend, compressed) and no network. Writes OUT/gpu-figures.txt (one
# "name value" line per figure) and the logs beside it, within 9.5 minutes
# (GPU_CHECK_SECONDS): each step has its own limit, cut to the time left,
# and a step that runs out or is skipped says so in the figures.
#
#  0. Without a carried backend, builds it there for sm_90 with the
#     machine's own CUDA 13 toolkit (scripts/cuda/build.sh, 16 cores: a
#     few minutes), and leaves it xz-compressed in OUT to carry next time.
#
#  1. The exactness tests with every layer on the GPU: runner/llama's GPU
#     test (the closed-form bigram, the tiny transformer against the float64
#     reference and the CPU, float32 and float16 caches) with
#     UDGAM_REQUIRE_GPU=1, so a backend that did not load fails instead of
#     skipping, and the package's reference tests, which load with the
#     default options and so offload too.
#  2. Fresh Text scored tokens/s on SmolLM2-135M- and 360M-shaped models
#     (gpudata: random weights, float16, byte tokens) over the benchmark's
#     mixed documents, packed and one document per decode; the 2,000 probe
#     items; and both tests on a set of the seed's size (1,670 documents),
#     each through bin/udgam-ci (float32 cache, the product's default).
#  3. float32 against float16 KV caches: the engine benchmarks of
#     runner/llama on both models (UDGAM_BENCH_KVF16).
#
# The bundle has no room for cuBLAS (libcublasLt alone is 540 MB): the CUDA
# 13 runtime and cuBLAS are taken from the machine (the image's CUDA
# toolkit or PyTorch's nvidia wheels), and linked beside the backend.
# UDGAM_CUDA_LIBS names the folder first.
set -uo pipefail
if [ $# -ne 2 ]; then
	echo "usage: gpu-check.sh BUNDLE OUT" >&2
	exit 2
fi
repo=$(cd "$(dirname "$0")/.." && pwd)
bundle=$(cd "$1" && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd)
figures=$out/gpu-figures.txt
: >"$figures"
work=${TMPDIR:-/tmp}/udgam-gpu-check
rm -rf "$work"
mkdir -p "$work/bin" "$work/lib/ollama" "$work/data"
fig() { echo "$*" | tee -a "$figures"; }
die() { fig "stopped $*"; exit 1; }
start=$(date +%s)
total=${GPU_CHECK_SECONDS:-570}
# limit N: N seconds, or what is left of the total if less; 1 when under 15
# (timeout 0 would mean no limit).
limit() {
	local left=$((total - ($(date +%s) - start)))
	[ "$left" -lt 15 ] && { echo 1; return; }
	echo $((left < $1 ? left : $1))
}

for f in udgam-ci llama.test gpudata; do
	xz -dc "$bundle/$f.xz" >"$work/bin/$f" && chmod +x "$work/bin/$f" || die "the bundle lacks $f.xz (make gpu-bundle)"
done
for f in "$bundle"/lib/*.xz; do
	[ -e "$f" ] || continue
	xz -dc "$f" >"$work/lib/ollama/$(basename "$f" .xz)" || die "cannot unpack $f"
done
if [ ! -f "$work/lib/ollama/libggml-cuda.so" ]; then
	cuda_root=${UDGAM_CUDA_ROOT:-/usr/local/cuda}
	[ -x "$cuda_root/bin/nvcc" ] || die "no libggml-cuda.so in the bundle and no nvcc in $cuda_root to build one"
	fig "backend_build $("$cuda_root/bin/nvcc" --version | tail -n 1), sm_90"
	mkdir -p "$work/src"
	tar -C "$work/src" -xJf "$bundle/ggml-src.tar.xz" || die "the bundle lacks ggml-src.tar.xz (make gpu-bundle)"
	b0=$(date +%s)
	UDGAM_CUDA_ROOT=$cuda_root UDGAM_CI_BUILD_CACHE=$work/cache CUDA_JOBS=$(nproc) timeout "$(limit 330)" \
		bash "$repo/scripts/cuda/build.sh" "$(echo "$work"/src/*)" 90-real "$work/lib/ollama" >"$out/backend-build.log" 2>&1 ||
		die "building the CUDA backend failed or ran out of time ($out/backend-build.log)"
	fig "backend_build_seconds $(( $(date +%s) - b0 ))"
	rm -f "$work/lib/ollama"/libcu*.so.13
	xz -T0 -6 -c "$work/lib/ollama/libggml-cuda.so" >"$out/libggml-cuda.so.xz"
	fig "backend_built $out/libggml-cuda.so.xz ($(du -h "$out/libggml-cuda.so.xz" | cut -f1); carry it in the bundle's lib/ next time)"
fi
(cd "$work/lib/ollama" && [ -e libggml-base.so ] || { ln -sf libggml-base.so.0.0.0 libggml-base.so.0 && ln -sf libggml-base.so.0 libggml-base.so; })

# The CUDA 13 runtime and cuBLAS from the machine, beside the backend
# (its RUNPATH is $ORIGIN).
cudalib=
for d in ${UDGAM_CUDA_LIBS:-} /usr/local/cuda/lib64 /usr/local/cuda-13*/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
	$(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, "cu13", "lib") for p in nvidia.__path__))' 2>/dev/null); do
	if [ -e "$d/libcublasLt.so.13" ] && [ -e "$d/libcudart.so.13" ]; then
		cudalib=$d
		break
	fi
done
[ -n "$cudalib" ] || die "no CUDA 13 libcudart.so.13 and libcublasLt.so.13 on this machine"
for so in libcudart.so.13 libcublas.so.13 libcublasLt.so.13; do
	ln -sf "$cudalib/$so" "$work/lib/ollama/$so"
done
export OLLAMA_LIBRARY_PATH=$work/lib/ollama
fig "cuda_libraries $cudalib"
fig "gpu $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 1)"

# 1. Exactness (the test binary runs in its package's folder, for testdata).
(cd "$repo/runner/llama" && UDGAM_REQUIRE_GPU=1 timeout "$(limit 150)" "$work/bin/llama.test" -test.count=1 -test.v \
	-test.run 'GPU|ClosedForm|MatchesReference|Invariance|PairKL|Wide' >"$out/tests.log" 2>&1)
rc=$?
fig "tests_exit $rc"
grep -E '^(--- (PASS|FAIL|SKIP)|FAIL|ok|PASS)' "$out/tests.log" | sed 's/^/tests /' | tee -a "$figures"
grep -E 'on the GPU|GPU devices|closed form|float64|UDGAM_REQUIRE_GPU' "$out/tests.log" | sed 's/^ */tests_log /' | tee -a "$figures"
[ $rc -eq 0 ] || fig "tests failed: $out/tests.log"
grep -q -- '--- PASS: TestGPUMatchesReferences' "$out/tests.log" || die "after the tests: no GPU in use (tests.log); the measurements would be the CPU's"

# 2. The product's speed, through bin/udgam-ci.
timeout "$(limit 120)" "$work/bin/gpudata" -out "$work/data" -docs 1670 || die "gpudata could not write the models and documents"
head -n 200 "$work/data/docs.jsonl" >"$work/data/docs200.jsonl"
score() { # name, seconds allowed, then udgam-ci's arguments
	local name=$1 secs
	secs=$(limit "$2")
	shift 2
	[ "$secs" -gt 1 ] || { fig "$name skipped: out of time"; return; }
	if timeout "$secs" "$work/bin/udgam-ci" score "$@" --git-repo udgamlabs/gpu-check --json >"$out/$name.json" 2>"$out/$name.err"; then
		python3 - "$out/$name.json" "$name" <<'PY' | tee -a "$figures"
import json, sys
d = json.load(open(sys.argv[1]))
keys = ["seconds", "tokens", "tokens_per_second", "docs", "bpb"] if d["test"] == "fresh" else ["seconds", "items", "accuracy"]
print(sys.argv[2], " ".join("%s=%s" % (k, d[k]) for k in keys if k in d))
PY
	else
		fig "$name failed or ran past ${secs}s: $(tail -n 2 "$out/$name.err" | tr '\n' ' ')"
	fi
}
for m in smol135m smol360m; do
	model=$work/data/$m.gguf
	score "$m-fresh-packed-seedset" 120 fresh --model "$model" --data "$work/data/docs.jsonl" --out "$work/$m-fresh.jsonl"
	score "$m-fresh-one-doc-per-decode-200docs" 45 fresh --model "$model" --data "$work/data/docs200.jsonl" --batch-tokens 1 --out "$work/$m-fresh1.jsonl"
	score "$m-probes-2000" 45 probes --model "$model" --out "$work/$m-probes.jsonl"
done

# The run header records where the layers went.
fig "runtime_gpu $(head -n 1 "$work/smol135m-fresh.jsonl" 2>/dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["runtime"].get("gpu"))' 2>&1)"

# 3. float32 against float16 caches, engine benchmarks back to back.
for m in smol135m smol360m; do
	for kv in 0 1; do
		secs=$(limit 40)
		[ "$secs" -gt 1 ] || { fig "bench $m kvf16=$kv skipped: out of time"; continue; }
		(cd "$repo/runner/llama" && UDGAM_BENCH_GGUF=$work/data/$m.gguf UDGAM_BENCH_KVF16=$kv timeout "$secs" "$work/bin/llama.test" \
			-test.run '^$' -test.bench 'SmolSeq2048$|SmolPacked16x128$' -test.benchtime 3x 2>&1) |
			grep -E '^Benchmark' | sed "s/^/bench $m kvf16=$kv /" | tee -a "$figures"
	done
done
fig "total_seconds $(( $(date +%s) - start ))"
