#!/usr/bin/env bash
# attnbench.sh times scripts/engine/attn.c on one thread (attnbench.c),
# compiled with the engine's flags, without rebuilding the engine. Run it
# on a quiet machine; arguments: keys and queries (default 2048 512).
#
#	bash scripts/engine/attnbench.sh
#	PORTABLE=1 bash scripts/engine/attnbench.sh   # the AVX2 kernel (x86-64-v3)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
eval "$(make -s env)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck disable=SC2086 # the flags are words
$(go env CC) $CGO_CFLAGS -I"$here" -o "$work/attnbench" "$here/attnbench.c" -lm
"$work/attnbench" "$@"
