#!/usr/bin/env bash
# build.sh OLLAMA_DIR ARCHS DEST [NVCC_FLAGS] compiles ggml's CUDA backend from the
# ollama module's sources with CMake, for the CUDA architectures ARCHS
# (CMake's list: "80-real;90-real" is machine code for sm_80 and sm_90,
# "80-virtual" PTX alone), with the toolkit of install.sh, and copies
# libggml-cuda.so and the libggml-base.so it links into DEST (lib/ollama),
# where bin/udgam-ci loads it. The CUDA runtime and cuBLAS it needs are
# linked there too, so the folder is whole on a runner without a toolkit.
# NVCC_FLAGS make a check build (make cuda-check's unoptimised device
# code): they are added to every CUDA compile, and the Release build's -O3
# is left out of its CUDA compiles, host code included.
#
# The build tree lives in the cache outside the repository, named by a hash
# of its inputs (the module's version, the toolkit's pins, ARCHS and this
# script), so every checkout and a CI cache restored later reuse the
# compiled objects; ninja rebuilds only what changed. CUDA_JOBS sets the
# parallel compiles (default: the number of cores), each at CUDA_NICE
# (default 19, so that a checkout's build yields to its tests).
set -euo pipefail
if [ $# -lt 3 ] || [ $# -gt 4 ] || [ -z "$1" ] || [ -z "$2" ]; then
	echo "usage: build.sh OLLAMA_DIR ARCHS DEST [NVCC_FLAGS]" >&2
	exit 2
fi
src=$1 archs=$2 dest=$3 nvcc_flags=${4:-}
here="$(cd "$(dirname "$0")" && pwd)"
cache="${UDGAM_CI_BUILD_CACHE:-${HOME:-/tmp}/.cache/udgam-ci}"
for tool in cmake ninja; do
	command -v "$tool" >/dev/null 2>&1 || { echo "cuda: $tool is not installed (apt-get install cmake ninja-build)" >&2; exit 1; }
done
# UDGAM_CUDA_ROOT names another CUDA 13 toolkit (a GPU machine's own,
# /usr/local/cuda, where there is no network for the wheels).
root="${UDGAM_CUDA_ROOT:-$(bash "$here/install.sh" | tail -n 1)}"

# GGML_CUDA_NO_VMM: ggml's memory pool then allocates with the runtime
# (cudaMalloc) instead of the driver's virtual memory calls, so the library
# does not link libcuda.so, which only a driver installs; without it the
# build would need a stub and the library would not even load on a machine
# without a driver, where it must load and find no device (issue 42).
# $ORIGIN: the CUDA runtime and cuBLAS are found beside the library.
flags=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$archs"
	-DGGML_CUDA_NO_VMM=ON -DGGML_CCACHE=OFF -DCMAKE_BUILD_RPATH='$ORIGIN')
# Only when given, so that make cuda's tree keeps its name.
[ -z "$nvcc_flags" ] || flags+=(-DCMAKE_CUDA_FLAGS="$nvcc_flags" -DCMAKE_CUDA_FLAGS_RELEASE=-DNDEBUG)
# The tree is named by what its objects depend on: the sources (the module's
# version), the toolkit and the flags; configuring again is cheap, and ninja
# recompiles only what a changed flag touches.
key="$( { basename "$src"; cat "$here/requirements.txt"; printf '%s\n' "${flags[@]}" ${UDGAM_CUDA_ROOT:+"$root"}; } | sha256sum | cut -c1-16)"
tree="$cache/cuda-build-$key"
mkdir -p "$cache"
tree=$(readlink -f "$tree") # a tree may be a link to another (CMake keeps its real path)
exec 9>"$tree.lock"
flock 9
nice -n "${CUDA_NICE:-19}" cmake -S "$src" -B "$tree" "${flags[@]}" \
	-DCMAKE_CUDA_COMPILER="$root/bin/nvcc" -DCUDAToolkit_ROOT="$root" >"$tree.configure.log" 2>&1 ||
	{ cat "$tree.configure.log" >&2; echo "cuda: cmake could not configure $src (log above)" >&2; exit 1; }
start=$(date +%s)
nice -n "${CUDA_NICE:-19}" cmake --build "$tree" --target ggml-cuda -j "${CUDA_JOBS:-$(nproc)}"
echo "cuda: ggml-cuda for $archs built in $(( $(date +%s) - start )) s (tree $tree)" >&2

mkdir -p "$dest"
cp -P "$tree"/lib/ollama/libggml-base.so* "$tree"/lib/ollama/libggml-cuda.so "$dest"/
for so in libcudart.so.13 libcublas.so.13 libcublasLt.so.13; do
	ln -sfn "$root/lib64/$so" "$dest/$so"
done
