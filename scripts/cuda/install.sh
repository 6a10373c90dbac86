#!/usr/bin/env bash
# Installs the CUDA toolkit that `make cuda` compiles with: the PyPI wheels
# of requirements.txt (every file pinned by hash) unpacked into a cache
# outside the repository, laid out as a toolkit root CMake and nvcc accept,
# and prints that root on its last line. The directory is named by a hash of
# requirements.txt, so a changed pin makes a new one; when it is already
# complete this only prints it. Safe to run from several processes at once
# (flock). Needs python3 with venv (for pip) and about 1.3 GB of disk; the
# first install took about 30 s here (600 MB of wheels).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
py="${UDGAM_CI_PYTHON:-python3}"
cache="${UDGAM_CI_BUILD_CACHE:-${HOME:-/tmp}/.cache/udgam-ci}"

command -v "$py" >/dev/null 2>&1 || { echo "cuda: $py is not installed (apt-get install python3 python3-venv)" >&2; exit 1; }
stamp="$(sha256sum <"$here/requirements.txt" | cut -c1-16)"
dest="$cache/cuda-toolkit-$stamp"
root="$dest/nvidia/cu13"
if [ -f "$dest/.complete" ]; then
	echo "$root"
	exit 0
fi

mkdir -p "$cache"
exec 9>"$cache/cuda-toolkit.lock"
flock 9
if [ -f "$dest/.complete" ]; then
	echo "$root"
	exit 0
fi

rm -rf "$dest" "$dest.pip"
echo "cuda: installing the CUDA toolkit wheels into $dest (first time: about 600 MB)" >&2
start=$(date +%s)
# pip from a throwaway virtual environment: the system's Python may have
# none, or refuse to install beside its own packages.
"$py" -m venv "$dest.pip" >&2
"$dest.pip/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --require-hashes \
	--only-binary=:all: --target "$dest" -r "$here/requirements.txt" >&2
rm -rf "$dest.pip"

# The wheels hold the files without a toolkit's links: nvcc.profile looks
# for lib64, and the linker and CMake's FindCUDAToolkit for unversioned
# library names.
ln -sfn lib "$root/lib64"
for so in "$root"/lib/lib*.so.*; do
	ln -sfn "$(basename "$so")" "${so%.so.*}.so"
done
"$root/bin/nvcc" --version | tail -n 2 >&2
echo "cuda: installed in $(( $(date +%s) - start )) s" >&2
touch "$dest/.complete"
echo "$root"
