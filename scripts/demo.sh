#!/usr/bin/env bash
# The demo behind `make demo`: make two small real models, score both on
# both tests with the embedded default data, compare them, write the PR
# comment the Action would post, and show the history on a local report
# server. Offline; run from the repository root after `make build`.
#
# Environment:
#   DEMO_DIR    work folder (default demo; emptied of the demo's files first)
#   DEMO_ADDR   server address (default 127.0.0.1:8765; port 0 picks a free one)
#   DEMO_SERVE  1 (default): serve until Ctrl-C; 0: stop once everything is uploaded
#   UDGAM_CI    the binary (default bin/udgam-ci)
#   GO          the go command (default go)
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

dir=${DEMO_DIR:-demo}
addr=${DEMO_ADDR:-127.0.0.1:8765}
keep_serving=${DEMO_SERVE:-1}
bin=${UDGAM_CI:-bin/udgam-ci}
go=${GO:-go}

# What the demo runs stand for: one model in training, whose main branch
# has the baseline and whose pull request #1 trains on more text.
model=demo-bigram
repo=udgam-demo/train

# The scorers fill git fields from GITHUB_* variables; inside a CI job those
# describe this repository, not the demo's, and would change its runs.
unset "${!GITHUB_@}"

step() { printf '\n==> %s\n' "$*"; }

[ -x "$bin" ] || { echo "demo: $bin not found; run make build first" >&2; exit 1; }
mkdir -p "$dir"
rm -f "$dir"/{baseline,candidate}.gguf "$dir"/{fresh,probes}-{baseline,candidate}.jsonl \
	"$dir"/comment.md "$dir"/runs.db* "$dir"/server.log "$dir"/token

step "Make two small real models (byte-level bigram language models, as GGUF)"
"$go" run ./scripts/demomodels -out "$dir"

score() { # test, model file stem, then extra header flags
	local test=$1 which=$2
	shift 2
	step "Score the $which on ${test} ($( [ "$test" = fresh ] && echo "embedded smoke sample of 30 documents, not the benchmark" || echo "embedded core set of 2,000 generated items"))"
	"$bin" score "$test" --model "$dir/$which.gguf" --out "$dir/$test-$which.jsonl" \
		--model-name "$model" --model-revision "$which" --git-repo "$repo" "$@"
}
for test in fresh probes; do
	score "$test" baseline --git-ref main
	score "$test" candidate --git-ref more-text --pr 1
done

for test in fresh probes; do
	step "Compare on $test: candidate (head) against baseline (base), paired bootstrap"
	"$bin" compare "$dir/$test-baseline.jsonl" "$dir/$test-candidate.jsonl"
done

step "Write the PR comment the Action would post"
"$go" run ./scripts/democomment -model "$model" -out "$dir/comment.md" \
	"$dir/fresh-baseline.jsonl" "$dir/fresh-candidate.jsonl" \
	"$dir/probes-baseline.jsonl" "$dir/probes-candidate.jsonl"
echo "wrote $dir/comment.md"

step "Start the report server with a fresh database ($dir/runs.db)"
"$bin" server token create --db "$dir/runs.db" --repo "$repo" >"$dir/token"
trap stop_server EXIT
DEMO_ADDR=$addr start_server "$dir/runs.db" "$dir/server.log"
url=$server_url
echo "serving on $url (log: $dir/server.log)"

step "Upload the baseline as main-branch runs and the candidate as PR #1 runs"
token=$(cat "$dir/token")
"$bin" push "$dir/fresh-baseline.jsonl" "$dir/probes-baseline.jsonl" --server "$url" --token "$token"
"$bin" push "$dir/fresh-candidate.jsonl" "$dir/probes-candidate.jsonl" --server "$url" --token "$token"

history="$url/models/$model"
echo
if [ "$keep_serving" = 0 ]; then
	echo "Done; the server stops now (the database keeps the runs: $bin serve --db $dir/runs.db serves them again)."
else
	echo "The server keeps serving until Ctrl-C (DEMO_SERVE=0 make demo stops at the end)."
fi
cat <<EOF
Shown: two bigram models fitted on 2 KB and 25 KB of the same text, scored on the embedded smoke sample and probe core set, compared by paired bootstrap.
Files: models, run files and the PR comment ($dir/comment.md) are in $dir/; the server's database is $dir/runs.db.
History page: $history
EOF
if [ "$keep_serving" != 0 ]; then
	wait "$server_pid"
fi
