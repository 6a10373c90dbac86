#!/usr/bin/env bash
# matrix.sh GOARCH BASE_FLAGS TARGET...: compile and link cmd/udgam-ci for
# CPUs the build machine need not have (make matrix; issue 38). A native
# build on a Sapphire Rapids Xeon once referenced a symbol nothing
# compiled, and only a machine of that kind found out: the link is checked
# here for each TARGET, written NAME=FLAGS with the flags joined by commas
# (graniterapids=-march=sapphirerapids,-mamx-fp16).
#
# A full llama.cpp compile per target would take 4-6 minutes on 2 cores.
# Only the packages whose C code tests the CPU's feature macros (ggml's
# base and CPU packages, their arch and llamafile parts, runner/llama) are
# compiled with each target's flags, through a #cgo directive added by
# go build -overlay; every other package is compiled once with BASE_FLAGS
# (the portable baseline's, so make variants shares them). The script
# checks that assumption on every run: a package outside that set whose C
# sources test a feature macro fails it. The link is the real one, with
# the external linker, so an undefined reference fails as on the machine.
#
# Targets the engine's sources cannot tell apart (the same predefined
# macros among those the sources name: view below) are linked once: the
# first one's link answers for the others, and the report says so.
#
# Per-target packages are compiled at MATRIX_OPT (make's -O0): the check is
# what a target's feature macros select, and GCC refuses an intrinsic
# without its target option at every level, while -O0 keeps every call, so
# no undefined reference hides behind dead code (-O3 took 6x the CPU on
# ggml's ops.cpp; what -O3 compiles runs in make test and arm64-test).
#
# A target written !NAME=FLAGS must instead fail with an undefined
# reference: the Makefile lists Sapphire Rapids with AMX turned back on, so
# every run shows that a link error fails the matrix.
#
# Flags this compiler does not know (GCC 12 has no -mamx-fp16) are left
# out, and the line says so. A target's success is remembered under
# ${UDGAM_CI_BUILD_CACHE:-~/.cache/udgam-ci}/matrix, keyed by a hash of
# everything that decides the link: this script, the flags, the engine
# copy (its name carries the hash of its edits), runner/llama's sources,
# go.mod/go.sum and the Go and C compilers' versions.
set -euo pipefail
if [ $# -lt 3 ]; then
	echo "usage: matrix.sh GOARCH BASE_FLAGS NAME=FLAG,FLAG... ..." >&2
	exit 2
fi
goarch=$1
base=$2
shift 2
opt=${MATRIX_OPT:?matrix.sh: MATRIX_OPT (the per-target optimisation level) is not set}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
go=${GO:-go}
export GOARCH=$goarch CGO_ENABLED=1
cc=$($go env CC)
cxx=$($go env CXX)
cache=${UDGAM_CI_BUILD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/udgam-ci}/matrix
mkdir -p "$cache"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The flags of the build that called this (make's native ones, which make
# build and make test compiled the engine with), before the base's replace
# them: a target the engine sees as that build links its objects.
native_cflags=${CGO_CFLAGS:-} native_cxxflags=${CGO_CXXFLAGS:-}
export CGO_CFLAGS="$base" CGO_CXXFLAGS="$base"
# The per-target directives carry -m flags that cgo's allow list lacks.
export CGO_CFLAGS_ALLOW='-m.*' CGO_CXXFLAGS_ALLOW='-m.*'

# The packages compiled per target, and the check that no other package's
# C code depends on the CPU's features (architecture macros such as
# __x86_64__ are the same for every target and do not count).
feature='__(AVX|AMX|SSE|SSSE|F16C|FMA|BMI|LZCNT|POPCNT|GFNI|VAES|VPCLMUL|ARM_NEON|ARM_FEATURE)[A-Z0-9_]*__'
per_target='/ml/backend/ggml/ggml/src$|/ggml-cpu$|/ggml-cpu/arch/[a-z0-9]*$|/ggml-cpu/llamafile$|/runner/llama$'
$go list -deps -f '{{if .CgoFiles}}{{.Dir}} {{.Name}} {{join .CFiles ","}},{{join .CXXFiles ","}},{{join .HFiles ","}}{{end}}' ./cmd/udgam-ci >"$work/cgo"
: >"$work/overlay.list"
while read -r dir name files; do
	if printf '%s\n' "$dir" | grep -Eq "$per_target"; then
		echo "$dir $name" >>"$work/overlay.list"
		continue
	fi
	for f in ${files//,/ }; do
		if grep -Eq "$feature" "$dir/$f"; then
			echo "matrix.sh: $dir/$f tests a CPU feature macro ($(grep -Eo "$feature" "$dir/$f" | head -1)), but its package is compiled once for every target: add it to per_target in $0" >&2
			exit 1
		fi
	done
done <"$work/cgo"
[ -s "$work/overlay.list" ] || { echo "matrix.sh: no per-target package found in cmd/udgam-ci's dependencies" >&2; exit 1; }

# What a cached success is keyed by, besides the target's flags.
inputs=$( {
	cat "$0" go.mod go.sum
	find runner/llama -maxdepth 1 -type f | sort | xargs cat
	echo "$base $opt"
	$go version
	"$cc" --version | head -1
	"$cxx" --version | head -1
	cut -d' ' -f1 "$work/cgo"
} | sha256sum | cut -c1-16)

known=$("$cc" -Q --help=target 2>/dev/null | awk '{print $1}' | grep -- '^-m' | sed 's/=.*//' | sort -u)

# check TARGET: build one target, write its line of the report to
# $work/NAME.out, and touch $work/NAME.failed when it did not do as it
# should.
# parse TARGET sets expect, name, flags (those the compiler knows) and
# skipped (those it does not) for the caller.
parse() {
	local target=$1 want f g
	expect=links flags=() skipped=()
	# !NAME=FLAGS must fail to link with an undefined reference: the
	# matrix's own check that a link error fails it (AMX turned back on).
	case $target in !*) expect=fails target=${target#!} ;; esac
	name=${target%%=*}
	IFS=, read -r -a want <<<"${target#*=}"
	for f in "${want[@]}"; do
		g=${f%%=*}
		if [ "$g" = -march ] || [ "$g" = -mcpu ] || grep -qx -- "$g" <<<"$known" || grep -qx -- "-m${g#-mno-}" <<<"$known"; then
			flags+=("$f")
		else
			skipped+=("$f")
		fi
	done
}

# What the engine's C code sees of a target is the compiler's predefined
# macros that its sources name (__AVX2__, __AMXINT8__, __ARM_FEATURE_SVE,
# ...); view FLAGS... is a hash of those, with their values, for the base
# flags followed by FLAGS. Two targets with one view compile the same
# code paths and reference the same symbols, so one link answers for both
# (Haswell and Zen 3 are x86-64-v3 to ggml; Skylake-X is x86-64-v4), and
# a target whose view is the base's links the packages as the base
# compiles them.
ggml=$(sed -n 's|^\(.*/ml/backend/ggml/ggml\)/src [a-z]*$|\1|p' "$work/overlay.list")
[ -d "$ggml" ] || { echo "matrix.sh: ggml's package is not among the per-target ones" >&2; exit 1; }
find "$ggml" runner/llama -type f \( -name '*.c' -o -name '*.h' -o -name '*.cpp' -o -name '*.hpp' \) -print0 |
	xargs -0 grep -ohE '\b[A-Za-z_][A-Za-z0-9_]*' | sort -u >"$work/names"
view() {
	# shellcheck disable=SC2086 # base is a list of flags
	"$cc" $base "$@" -dM -E - </dev/null |
		awk 'NR == FNR { named[$1]; next } $2 in named { print $2, $3 }' "$work/names" - | sort | sha256sum | cut -c1-16
}
base_view=$(view)
native_view=none
if [ -n "$native_cflags" ] && [ "$native_cflags" = "$native_cxxflags" ]; then
	# shellcheck disable=SC2086 # a list of flags
	native_view=$(base="" view $native_cflags)
fi

check() {
	local expect name flags skipped key note file sep got dir pkg overlay=()
	parse "$1"
	key=$(printf '%s\n' "$inputs" "${flags[@]}" | sha256sum | cut -c1-16)
	note=""
	[ ${#skipped[@]} -eq 0 ] || note=" (without ${skipped[*]}: $(basename "$cc") does not know them)"
	if [ -f "$cache/$name-$key.$expect" ]; then
		echo "matrix: $name $expect as it should (cached)$note" >"$work/$name.out"
		return
	fi
	# The overlay adds one Go file with the target's flags to each
	# per-target package; cgo puts a package's directives after
	# CGO_CFLAGS, so the target's -march wins over the base's. A target
	# the engine sees as the base needs none: its link reuses what the
	# base compiled (make arm64-test compiles arm64's); one it sees as the
	# calling build links that build's objects.
	local v env=()
	v=$(view "${flags[@]}")
	if [ "$v" = "$base_view" ]; then
		note="$note (the base's view: no overlay)"
	elif [ "$v" = "$native_view" ]; then
		env=(CGO_CFLAGS="$native_cflags" CGO_CXXFLAGS="$native_cxxflags")
		note="$note (this machine's view: make build's objects)"
	else
		printf '{"Replace":{' >"$work/$name.json"
		sep=""
		while read -r dir pkg; do
			file="$work/$name-$(echo "$dir" | cksum | cut -d' ' -f1).go"
			printf 'package %s\n\n// #cgo CFLAGS: %s\n// #cgo CXXFLAGS: %s\nimport "C"\n' "$pkg" "$opt ${flags[*]}" "$opt ${flags[*]}" >"$file"
			printf '%s"%s/udgam_matrix_target.go":"%s"' "$sep" "$dir" "$file" >>"$work/$name.json"
			sep=,
		done <"$work/overlay.list"
		printf '}}\n' >>"$work/$name.json"
		overlay=(-overlay "$work/$name.json")
	fi
	got=fails
	TIMEFORMAT='%0R s, %0U+%0S CPU s'
	if { time env "${env[@]}" $go build "${overlay[@]}" -ldflags '-s -w' -o "$work/udgam-ci-$name" ./cmd/udgam-ci 2>"$work/$name.log"; } 2>"$work/$name.time"; then
		got=links
	elif [ $expect = fails ] && ! grep -q 'undefined reference' "$work/$name.log"; then
		got="fails for another reason than an undefined reference"
	fi
	rm -f "$work/udgam-ci-$name"
	if [ "$got" = $expect ]; then
		{
			echo "matrix: $name $got as it should ($(cat "$work/$name.time"))$note"
			[ $expect = links ] || grep -o 'undefined reference to .*' "$work/$name.log" | sort -u | head -3 | sed 's/^/matrix:   /'
		} >"$work/$name.out"
		echo "${flags[*]}" >"$cache/$name-$key.$expect"
	else
		{
			echo "matrix: $name $got; it should have $([ $expect = links ] && echo linked || echo failed to link), compiled with $CGO_CFLAGS, then ${flags[*]}$note:"
			grep -E 'undefined reference|error' "$work/$name.log" | sort -u | head -20 || tail -20 "$work/$name.log"
		} >"$work/$name.out"
		touch "$work/$name.failed"
	fi
}

# Go compiles a cgo package's C files one after another, and these
# packages depend on one another, so one target keeps about one core busy:
# MATRIX_JOBS targets (the cores, by default) build at once. The first
# builds alone, so that the packages every target shares are compiled once.
jobs=${MATRIX_JOBS:-$(nproc)}
n=0
declare -A first=() same=()
for target in "$@"; do
	parse "$target"
	v="$expect $(view "${flags[@]}")"
	if [ -n "${first[$v]:-}" ]; then
		same[$name]=${first[$v]}
		continue
	fi
	first[$v]=$name
	check "$target" &
	n=$((n + 1))
	if [ $n = 1 ]; then wait; fi
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
done
wait
failed=()
for target in "$@"; do
	target=${target#!}
	name=${target%%=*}
	if [ -n "${same[$name]:-}" ]; then
		if [ -f "$work/${same[$name]}.failed" ]; then
			echo "matrix: $name not built: the engine sees it as ${same[$name]}, which did not do as it should"
			failed+=("$name")
		else
			echo "matrix: $name as ${same[$name]}: the engine sees the same macros (not built again)"
		fi
		continue
	fi
	cat "$work/$name.out"
	[ ! -f "$work/$name.failed" ] || failed+=("$name")
done
if [ ${#failed[@]} -gt 0 ]; then
	echo "matrix: ${failed[*]} did not do as they should (of $# $goarch targets)" >&2
	exit 1
fi
echo "matrix: all $# $goarch targets did as they should ($((${#first[@]})) built or cached, $((${#same[@]})) the same as one of them)"
