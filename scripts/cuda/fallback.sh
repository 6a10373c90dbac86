#!/usr/bin/env bash
# fallback.sh LIBDIR: bin/udgam-ci with the CUDA backend of LIBDIR (make
# cuda's lib/ollama, or make cuda-check's) in its search path, on a machine
# where that backend finds no GPU (no device, or no driver: the CUDA
# runtime's own wheel brings libcudart but never the driver's libcuda.so),
# must score on the CPU with the CPU build's results and say so in one line.
# Scores a small random transformer (scripts/cuda/fallbackmodel) on both
# tests twice, through the real binary: with no GPU library in its search
# path (the CPU build as users have it) and with LIBDIR; the records must
# be the same bytes, and stderr must differ by exactly one line, the
# warning naming the library and why it found no GPU. Exits non-zero on any
# difference, also on a machine where the backend finds a GPU (that is
# scripts/gpu-check.sh's ground).
set -euo pipefail
if [ $# -ne 1 ]; then
	echo "usage: fallback.sh LIBDIR" >&2
	exit 2
fi
lib=$(cd "$1" && pwd)
bin=${UDGAM_CI:-bin/udgam-ci}
go=${GO:-go}
[ -f "$lib/libggml-cuda.so" ] || { echo "fallback: FAIL: no libggml-cuda.so in $lib (make cuda-check builds it)" >&2; exit 1; }
[ -x "$bin" ] || { echo "fallback: FAIL: $bin not found; run make build first" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "fallback: FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "fallback: ok: $*"; }

"$go" run ./scripts/cuda/fallbackmodel -out "$tmp/model.gguf"
# OnceLoad only searches folders named .../lib/ollama; this one is empty.
mkdir -p "$tmp/none/lib/ollama"
score() { # test, name, library folder
	local test=$1 name=$2 dir=$3
	set -- --model "$tmp/model.gguf" --out "$tmp/$test-$name.jsonl" --threads 1 --git-repo udgamlabs/fallback
	# The test model's context is 512 tokens.
	[ "$test" = fresh ] && set -- "$@" --window 512 --stride 256
	OLLAMA_LIBRARY_PATH=$dir "$bin" score "$test" "$@" >"$tmp/$test-$name.out" 2>"$tmp/$test-$name.err" ||
		{ cat "$tmp/$test-$name.err" >&2; return 1; }
	# Progress lines carry timings; everything else on stderr is compared.
	grep -v '^progress: ' "$tmp/$test-$name.err" >"$tmp/$test-$name.said" || true
}

for test in fresh probes; do
	score "$test" cpu "$tmp/none/lib/ollama" || { fail "$test: the CPU run failed (above)"; continue; }
	score "$test" cuda "$lib" || { fail "$test: the run with $lib failed (above)"; continue; }
	if grep -q '^warning: .*libggml-cuda.so.*scoring on the CPU' "$tmp/$test-cpu.said"; then
		fail "$test: the run without a GPU library warns of one: $(cat "$tmp/$test-cpu.said")"
	fi
	extra=$(diff "$tmp/$test-cpu.said" "$tmp/$test-cuda.said" | grep '^[<>]' || true)
	if [ "$(printf '%s\n' "$extra" | grep -c .)" = 1 ] && printf '%s\n' "$extra" | grep -q "^> warning: $lib/libggml-cuda.so .*; scoring on the CPU, with the CPU build's results$"; then
		pass "$test: one line on stderr: ${extra#> }"
	else
		fail "$test: stderr with the CUDA library differs by other than the one warning line (none: a machine with a GPU has nothing to fall back from):"$'\n'"$extra"
	fi
	# The header records times and the run's id; every record must match.
	if cmp -s <(tail -n +2 "$tmp/$test-cpu.jsonl") <(tail -n +2 "$tmp/$test-cuda.jsonl"); then
		pass "$test: $(($(wc -l <"$tmp/$test-cpu.jsonl") - 1)) records, the same bytes with and without the CUDA backend"
	else
		fail "$test: records differ with the CUDA backend present: $(diff <(tail -n +2 "$tmp/$test-cpu.jsonl") <(tail -n +2 "$tmp/$test-cuda.jsonl") | head -n 4)"
	fi
done
if [ "$failures" -gt 0 ]; then
	echo "fallback: $failures check(s) failed" >&2
	exit 1
fi
echo "fallback: passed"
