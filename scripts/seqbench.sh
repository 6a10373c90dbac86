#!/usr/bin/env bash
# Records and wall time to a decision with --until decided, next to the
# full run, on the real models `make demo` makes (byte-level bigram GGUFs
# scored by llama.cpp, fitted on the first 2 KB, 16 KB and all 25 KB of
# one training text): the candidate against the baseline (a large known
# difference), the candidate against the 16 KB model (a smaller one) and
# the baseline against itself (none). Fresh Text reads this
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
"$go" run ./scripts/demomodels -out "$dir" -mid 16384 >/dev/null
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
	for m in baseline mid candidate; do
		echo "$test $m full run: $(score "$test" "$m" "$test-$m")s"
	done
	for pair in candidate:baseline candidate:mid baseline:baseline; do
		head=${pair%%:*} base=${pair##*:}
		ts=$(score "$test" "$head" "$test-$head-vs-$base" --until decided --baseline "$dir/$test-$base.jsonl")
		"$bin" compare "$dir/$test-$base.jsonl" "$dir/$test-$head-vs-$base.jsonl" --json |
			jq -r --arg t "$ts" --arg p "$pair" '"\(.test) \($p): \(.sequential.reason) after \(.sequential.scored) of \(.sequential.total) in \($t)s; delta \(.delta) anytime-valid \(.ci) \(.verdict)"'
		"$bin" compare "$dir/$test-$base.jsonl" "$dir/$test-$head.jsonl" --json |
			jq -r '"  full runs: delta \(.delta) bootstrap \(.ci) \(.verdict)"'
	done
done
