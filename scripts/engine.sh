#!/usr/bin/env bash
# engine.sh OLLAMA_DIR GO_WORK writes a Go workspace file that builds
# against a copy of the ollama module with udgam-ci's edits to llama.cpp,
# and prints its path (the Makefile exports it as GOWORK).
# engine.sh --check OLLAMA_DIR only checks the edits (make check-patches).
#
# The edits are the patches in scripts/engine/patches, applied in order;
# each one's header says why:
#   0001 GELU in float32 (ggml rounds it through float16)
#   0002 gptneox's GELU in the erf form (Pythia's)
#   0003 rope's angles and their cos and sin in double
#   0004 tinyBLAS takes strided second operands (attention's scores)
#   0005 tinyBLAS keeps loaded operands in registers on AVX2
#   0006 large matrix products to udgam-gemm.c (scripts/engine/gemm.c)
#   0007 flash attention to udgam-attn.c (scripts/engine/attn.c)
#   0008 flash attention keeps a float32 KV cache in float32
#   0009 ggml's own flash attention sums as attn.c does (arm64, x86 without AVX2)
#   0010 tinyBLAS's NEON float16 kernel takes float16 activations (as x86)
#   0011 quantized weights to udgam-qgemm.c (scripts/engine/qgemm.c)
#   0012 GELU through the sigmoid, vectorized (ggml called tanhf per element)
#   0013 the output head left to the caller (runner/llama, qgemm.c's udgam_head)
# Each must apply whole, with no fuzz and not already applied, to the module
# as downloaded, or the build fails (scripts/engine/patches/README.md says
# how to change one).
#
# go build -overlay cannot replace files in the module cache, so the copy
# (the module as downloaded plus the patches and the C files; no
# upstream source lives in this repository) is made once per machine,
# module version and version of this script, the patches and the C files,
# under ${UDGAM_CI_BUILD_CACHE:-~/.cache/udgam-ci}, where every checkout
# with the same edits shares it and so llama.cpp's compiled objects;
# checkouts with other edits (another branch) get their own copy instead of
# rewriting one another's. runner/llama refuses GELU and rope models in a
# binary built without it.
set -euo pipefail
fail() { echo "engine.sh: $*" >&2; exit 1; }
root=$(cd "$(dirname "$0")/.." && pwd)
patches=("$root"/scripts/engine/patches/[0-9][0-9][0-9][0-9]-*.patch)
[ -f "${patches[0]}" ] || fail "no patches in $root/scripts/engine/patches"
cpu=ml/backend/ggml/ggml/src/ggml-cpu

# apply DIR applies every patch, in order, to DIR, a scratch copy of the
# module: --forward refuses a patch already applied, --fuzz=0 one whose
# context lines differ (the same lines elsewhere in the file are taken),
# and any hunk refused fails the build.
apply() {
	local p out
	command -v patch >/dev/null || fail "needs patch(1) (Debian: apt-get install patch)"
	for p in "${patches[@]}"; do
		out=$(patch -d "$1" -p1 --forward --fuzz=0 --batch --no-backup-if-mismatch --reject-file=- <"$p" 2>&1) ||
			fail "${p#"$root"/} does not apply to $mod (the ollama module changed? update the patch):
$out"
	done
}

if [ "${1:-}" = --check ]; then
	# The files the patches touch, as downloaded, patched in a scratch
	# folder; then every patch again, each of which must now be refused as
	# applied, so a patch that changes nothing cannot pass either.
	[ $# -eq 2 ] || fail "usage: engine.sh --check OLLAMA_DIR"
	mod=$2
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	mapfile -t files < <(sed -n 's|^+++ b/||p' "${patches[@]}" | sort -u)
	for f in "${files[@]}"; do
		[ -f "$mod/$f" ] || fail "$mod has no $f, which a patch edits"
		mkdir -p "$tmp/$(dirname "$f")"
		cp "$mod/$f" "$tmp/$f"
		chmod u+w "$tmp/$f"
	done
	apply "$tmp"
	for p in "${patches[@]}"; do
		if patch -d "$tmp" -p1 --forward --fuzz=0 --batch --dry-run <"$p" >/dev/null 2>&1; then
			fail "${p#"$root"/} applies twice: it must be refused once applied"
		fi
	done
	echo "engine.sh: ${#patches[@]} patches apply to $mod"
	exit 0
fi

if [ $# -ne 2 ] || [ -z "$1" ]; then
	echo "usage: engine.sh OLLAMA_DIR GO_WORK" >&2
	exit 2
fi
mod=$1
work=$2
cache=${UDGAM_CI_BUILD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/udgam-ci}
copy=$cache/ollama-engine/$(basename "$mod")-$(cat "$0" "$root/scripts/engine/gemm.c" "$root/scripts/engine/attn.c" "$root/scripts/engine/qgemm.c" "${patches[@]}" | cksum | cut -d" " -f1)

# The copy is made and patched in a scratch folder and renamed into place
# whole, so a build never sees it half made.
if [ ! -f "$copy/.udgam-copied" ]; then
	mkdir -p "$(dirname "$copy")"
	scratch=$(mktemp -d "$copy.tmp.XXXXXX")
	trap 'rm -rf "$scratch"' EXIT
	cp -R "$mod/." "$scratch"
	chmod -R u+w,go+rX "$scratch"
	apply "$scratch"
	# Beside ggml-cpu.c and ops.cpp, so cgo compiles them into ggml-cpu.
	cp "$root/scripts/engine/gemm.c" "$scratch/$cpu/udgam-gemm.c"
	cp "$root/scripts/engine/attn.c" "$scratch/$cpu/udgam-attn.c"
	cp "$root/scripts/engine/qgemm.c" "$scratch/$cpu/udgam-qgemm.c"
	chmod 644 "$scratch/$cpu/udgam-gemm.c" "$scratch/$cpu/udgam-attn.c" "$scratch/$cpu/udgam-qgemm.c"
	touch "$scratch/.udgam-copied"
	# Another make may have finished first (its copy is the same); then mv
	# would put this one inside it.
	if [ ! -e "$copy" ]; then mv "$scratch" "$copy" || true; fi
	rm -rf "$scratch" "$copy/$(basename "$scratch")"
	[ -f "$copy/.udgam-copied" ] || fail "could not create $copy"
fi

goversion=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$root/go.mod")
mkdir -p "$(dirname "$work")"
tmp=$(mktemp "$work.XXXXXX")
printf 'go %s\n\nuse %s\n\nreplace github.com/ollama/ollama => %s\n' "$goversion" "$root" "$copy" >"$tmp"
if cmp -s "$tmp" "$work"; then rm -f "$tmp"; else mv "$tmp" "$work"; fi
echo "$work"
