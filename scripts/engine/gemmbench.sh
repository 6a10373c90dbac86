#!/usr/bin/env bash
# gemmbench.sh times scripts/engine/gemm.c against llamafile's tinyBLAS,
# one product on one thread (gemmbench.c), both compiled with the engine's
# flags; tinyBLAS from the engine copy scripts/engine.sh makes. Run it on a
# quiet machine:
#
#	bash scripts/engine/gemmbench.sh [ROUNDS [SHAPE...]]
#
# MARCH=x86-64-v4 (any -march) compiles both with the launcher variant's
# flags instead of this machine's; GEMM_FLAGS adds flags to gemm.c's side
# only (GEMM_FLAGS=-mno-avx512f: gemm.c's AVX2 kernel against the AVX-512
# tinyBLAS).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
eval "$(make -s env)"
if [ -n "${MARCH:-}" ]; then
	CGO_CFLAGS="-O3 -march=$MARCH"
	CGO_CXXFLAGS="-O3 -march=$MARCH"
fi
copy=$(sed -n 's/^replace .* => //p' "$GOWORK")
ggml=$copy/ml/backend/ggml/ggml
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc=$(go env CC)
cxx=$(go env CXX)
# shellcheck disable=SC2086 # the flags are words
$cxx $CGO_CXXFLAGS -std=c++17 -DGGML_USE_LLAMAFILE -DNDEBUG -I"$ggml/src/ggml-cpu" -I"$ggml/src" -I"$ggml/include" \
	-c "$ggml/src/ggml-cpu/llamafile/sgemm.cpp" -o "$work/sgemm.o"
# shellcheck disable=SC2086
$cc $CGO_CFLAGS ${GEMM_FLAGS:-} -I"$here" -c "$here/gemmbench.c" -o "$work/gemmbench.o"
$cxx -o "$work/gemmbench" "$work/gemmbench.o" "$work/sgemm.o" -lm
"$work/gemmbench" "$@"
