#!/usr/bin/env bash
# make e2e: the newcomer's path checked end to end. Runs the demo in a
# temporary folder, then checks what a newcomer would look at: the files are
# there, the candidate is significantly better on Fresh Text, the comment
# has its hidden marker and intervals, the history page (served again from
# the demo's database) shows all four runs, and docs/ is current.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

bin=${UDGAM_CI:-bin/udgam-ci}
tmp=$(mktemp -d)
cleanup() { stop_server; rm -rf "$tmp"; }
trap cleanup EXIT
dir=$tmp/demo
failures=0
fail() { echo "e2e: FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "e2e: ok: $*"; }

echo "e2e: running the demo in $dir"
if ! DEMO_DIR=$dir DEMO_SERVE=0 DEMO_ADDR=127.0.0.1:0 bash scripts/demo.sh >"$tmp/demo.log" 2>&1; then
	tail -n 40 "$tmp/demo.log" >&2
	echo "e2e: FAIL: the demo failed (last lines above)" >&2
	exit 1
fi

missing=
for f in baseline.gguf candidate.gguf fresh-baseline.jsonl fresh-candidate.jsonl \
	probes-baseline.jsonl probes-candidate.jsonl comment.md runs.db; do
	[ -s "$dir/$f" ] || missing="$missing $f"
done
if [ -z "$missing" ]; then pass "demo outputs present"; else fail "demo outputs missing:$missing"; fi

if tail -n 3 "$tmp/demo.log" | grep -q '^History page: http://127\.0\.0\.1:[0-9]*/models/demo-bigram$'; then
	pass "the demo ends with what was shown, where the files are and the history URL"
else
	fail "the demo's last three lines lack the history page URL: $(tail -n 3 "$tmp/demo.log")"
fi

# Fresh Text: lower is better, so the candidate must improve with an
# interval wholly below zero. (Top-level keys are indented by two spaces.)
"$bin" compare --json "$dir/fresh-baseline.jsonl" "$dir/fresh-candidate.jsonl" >"$tmp/fresh.json"
if grep -q '^  "verdict": "improved"' "$tmp/fresh.json" && grep -q '^  "significant": true' "$tmp/fresh.json" &&
	grep -q '^  "delta": -' "$tmp/fresh.json"; then
	pass "Fresh Text: candidate significantly better ($(grep '^  "delta"' "$tmp/fresh.json" | tr -d ' ,'))"
else
	fail "Fresh Text comparison is not a significant improvement: $(head -c 400 "$tmp/fresh.json")"
fi

marker='<!-- udgam-ci: model=demo-bigram -->'
if [ "$(head -n 1 "$dir/comment.md")" = "$marker" ]; then
	pass "comment starts with its hidden marker"
else
	fail "comment's first line is not $marker"
fi
if grep -Eq '^\| Fresh Text .*\| \[[-+][0-9.]+, [-+][0-9.]+\] \|' "$dir/comment.md" &&
	grep -Eq '^\| Probe Suite .*\| \[[-+][0-9.]+, [-+][0-9.]+\] \|' "$dir/comment.md"; then
	pass "comment has an interval for each test"
else
	fail "comment lacks a 95% interval row for both tests"
fi

# The history page, from the database alone (the demo's server is gone).
start_server "$dir/runs.db" "$tmp/server.log"
if http_get "$server_url/models/demo-bigram" >"$tmp/history.html"; then
	for run in "$dir"/{fresh,probes}-{baseline,candidate}.jsonl; do
		id=$(run_id "$run")
		if [ -n "$id" ] && grep -q "$id" "$tmp/history.html"; then
			pass "history page shows $(basename "$run" .jsonl) ($id)"
		else
			fail "history page lacks the run of $(basename "$run") (id '$id')"
		fi
	done
else
	fail "GET $server_url/models/demo-bigram failed"
fi
stop_server

if bash scripts/docs.sh --check --from "$dir"; then
	pass "docs/ is current"
else
	fail "docs/ is stale"
fi

if [ "$failures" -gt 0 ]; then
	echo "e2e: $failures check(s) failed (demo log: rerun DEMO_SERVE=0 make demo to see it)" >&2
	exit 1
fi
echo "e2e: all checks passed"
