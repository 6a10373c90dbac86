#!/usr/bin/env bash
# Records and wall time to a decision with --until decided, next to the
# full run, on the two real models `make demo` makes (byte-level bigram
# GGUFs scored by llama.cpp; the candidate saw far more text): the
# candidate against the baseline (a large known difference) and the
# baseline against itself (no difference). Fresh Text reads this
# repository's own prose, text neither model was trained on: Markdown
# paragraphs of 150 bytes or more and Go comment blocks of 200 or more
# (without control-token literals); the Probe Suite its core set.
# Figures: BENCHMARKS.md. Run from the repository root after make build.
#
#   scripts/seqbench.sh [DIR]
set -euo pipefail
dir=${1:-seqbench}
bin=${UDGAM_CI:-bin/udgam-ci}
go=${GO:-go}
mkdir -p "$dir"
rm -f "$dir"/*.jsonl
"$go" run ./scripts/demomodels -out "$dir" >/dev/null
prose() { # min-bytes source: paragraphs on stdin to documents
	jq -Rsc --argjson min "$1" --arg src "$2" 'split("\n\n") | map(select(length >= $min and (contains("<|") | not))) |
		to_entries[] | {id: "\($src)-\(.key)", text: .value, source: $src}'
}
{
	find . -name '*.md' -not -path './.git/*' -not -path "./$dir/*" | sort | xargs cat | prose 150 markdown
	find . -name '*.go' -not -path './.git/*' -not -path '*/testdata/*' | sort |
		xargs awk '/^[ \t]*\/\//{sub(/^[ \t]*\/\/ ?/,""); print; inb=1; next} {if(inb){print ""; inb=0}}' | prose 200 comments
} >"$dir/docs.jsonl"
echo "documents: $(wc -l <"$dir/docs.jsonl")"

secs() { # command...: run it, print its wall seconds
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >/dev/null 2>&1
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc
}
score() { # test model out [flags...]
	local test=$1 model=$2 out=$3
	shift 3
	local data=(--data "$dir/docs.jsonl")
	[ "$test" = probes ] && data=()
	secs "$bin" score "$test" --model "$dir/$model.gguf" "${data[@]}" --out "$dir/$out.jsonl" --threads 2 --model-name "$model" "$@"
}
for test in fresh probes; do
	tb=$(score "$test" baseline "$test-baseline")
	tc=$(score "$test" candidate "$test-candidate")
	echo "$test full runs: baseline ${tb}s, candidate ${tc}s"
	for pair in candidate baseline; do
		ts=$(score "$test" "$pair" "$test-$pair-seq" --until decided --baseline "$dir/$test-baseline.jsonl")
		"$bin" compare "$dir/$test-baseline.jsonl" "$dir/$test-$pair-seq.jsonl" --json |
			jq -r --arg t "$ts" --arg p "$pair" '"\(.test) \($p) vs baseline: \(.sequential.reason) after \(.sequential.scored) of \(.sequential.total) (\($t)s); delta \(.delta) ci \(.ci) verdict \(.verdict)"'
		"$bin" compare "$dir/$test-baseline.jsonl" "$dir/$test-$pair.jsonl" --json 2>/dev/null |
			jq -r '"  full run: delta \(.delta) ci \(.ci) verdict \(.verdict)"' || true
	done
done
