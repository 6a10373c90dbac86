#!/usr/bin/env bash
# Installs the Python reference stack (requirements.txt: torch, transformers,
# tokenizers, safetensors, numpy, lm-eval, every package pinned) into a
# virtual environment in a cache outside the repository, and prints the
# environment's directory on its last line. The directory is named by a hash
# of requirements.txt and the Python version, so a changed pin makes a new
# one; when it is already complete this only prints it. Safe to run from
# several processes at once (flock). Python is the judge only: nothing in the
# product imports it.
#
# PyPI's torch wheel for Linux pulls NVIDIA's CUDA libraries (about 4 GB on
# disk); the first install took 7-8 minutes here (docs/reference-stack.md).
# UDGAM_CI_PYTHON picks the interpreter (python3 by default, 3.10 or newer).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
py="${UDGAM_CI_PYTHON:-python3}"
cache="${UDGAM_CI_BUILD_CACHE:-${HOME:-/tmp}/.cache/udgam-ci}"

command -v "$py" >/dev/null 2>&1 || { echo "pyref: $py is not installed (apt-get install python3 python3-venv)" >&2; exit 1; }
pyver="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
"$py" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || { echo "pyref: $py is Python $pyver; the reference stack needs 3.10 or newer (UDGAM_CI_PYTHON=...)" >&2; exit 1; }

stamp="$( { cat "$here/requirements.txt"; echo "python $pyver"; } | sha256sum | cut -c1-16)"
dest="$cache/pyref-$stamp"
if [ -f "$dest/.complete" ]; then
	echo "$dest"
	exit 0
fi

mkdir -p "$cache"
exec 9>"$cache/pyref.lock"
flock 9
if [ -f "$dest/.complete" ]; then
	echo "$dest"
	exit 0
fi

# A virtual environment cannot be moved once made, so it is built in place
# and marked complete last; a half-built one (an interrupted install) is
# removed first.
rm -rf "$dest"
echo "pyref: installing the reference stack into $dest (first time: several minutes, about 4 GB)" >&2
start=$(date +%s)
"$py" -m venv "$dest" >&2
"$dest/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip >&2
"$dest/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt" >&2
"$dest/bin/python" -c 'import torch, transformers, tokenizers, safetensors, numpy, lm_eval' >&2
echo "pyref: installed in $(( $(date +%s) - start )) s" >&2
touch "$dest/.complete"
echo "$dest"
