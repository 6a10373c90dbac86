#!/usr/bin/env bash
# The README's examples, made by the project itself from the demo:
#   docs/example-comment.md   the PR comment of the demo's comparison
#   docs/history.png          a screenshot of the demo's history page
#   docs/history.html         that page's HTML with run ids, dates and digits
#                             blanked, so a check need not compare pixels and
#                             says what changed (a diff)
#
# scripts/docs.sh            regenerate them (make docs; needs chromium)
# scripts/docs.sh --check    fail if the committed ones are stale, or if a README
#                            that shows the comment's headline rows shows old ones
#                            (make check-docs)
# --from DIR                 use a finished demo in DIR instead of running one
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

check=0
from=
while [ $# -gt 0 ]; do
	case $1 in
	--check) check=1 ;;
	--from) from=$2; shift ;;
	*) echo "usage: scripts/docs.sh [--check] [--from DEMO_DIR]" >&2; exit 2 ;;
	esac
	shift
done

model=demo-bigram
out=docs
tmp=$(mktemp -d)
cleanup() { stop_server; rm -rf "$tmp"; }
trap cleanup EXIT

if [ -z "$from" ]; then
	from=$tmp/demo
	echo "running the demo in $from (log: $tmp/demo.log)"
	if ! DEMO_DIR=$from DEMO_SERVE=0 DEMO_ADDR=127.0.0.1:0 bash scripts/demo.sh >"$tmp/demo.log" 2>&1; then
		tail -n 40 "$tmp/demo.log" >&2
		echo "docs: the demo failed (last lines above)" >&2
		exit 1
	fi
fi

# The history page, served from the demo's database.
DEMO_ADDR=127.0.0.1:0 start_server "$from/runs.db" "$tmp/server.log"
page=$server_url/models/$model
http_get "$page" >"$tmp/history.html"
# Run ids and times change on every run (a run's interval depends only on
# its records). Keep the page with those blanked and every digit zeroed: it
# still changes when the page's layout, labels or runs change. (The comment
# is compared exactly, so a change in the demo's scores shows there.)
sed -E \
	-e 's/[0-9]{8}T[0-9]{6}Z-[0-9a-f]{16}/RUN/g' \
	-e 's/(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [0-9]{1,2}/DAY/g' \
	-e 's/[0-9]/0/g' \
	"$tmp/history.html" >"$tmp/history.blank.html"

if [ "$check" = 1 ]; then
	stale=0
	if ! diff -u "$out/example-comment.md" "$from/comment.md" >"$tmp/comment.diff"; then
		head -n 40 "$tmp/comment.diff" >&2
		echo "docs: $out/example-comment.md is stale (diff above)" >&2
		stale=1
	fi
	if ! diff -u "$out/history.html" "$tmp/history.blank.html" >"$tmp/history.diff"; then
		head -n 60 "$tmp/history.diff" >&2
		echo "docs: $out/history.png is stale: the history page's HTML changed (diff above, digits zeroed)" >&2
		stale=1
	fi
	# A README that shows the example comment must show its current
	# headline rows.
	for readme in README.md docs/*.md; do
		grep -q 'docs/example-comment.md' "$readme" 2>/dev/null || continue
		while IFS= read -r row; do
			if ! grep -qxF -- "$row" "$readme"; then
				echo "docs: $readme lacks the comment's current headline row: $row" >&2
				stale=1
			fi
		done < <(grep -E '^\| (Fresh Text|Probe Suite) \(' "$from/comment.md")
	done
	if [ "$stale" = 1 ]; then
		echo "docs: run make docs, copy the comment's headline rows into the README if it shows them, and commit" >&2
		exit 1
	fi
	echo "docs: $out/example-comment.md and $out/history.png are current"
	exit 0
fi

browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "installing chromium for the screenshot"
		apt-get install -y -q chromium >"$tmp/apt.log" 2>&1 || { tail "$tmp/apt.log" >&2; exit 1; }
		browser=$(command -v chromium)
	else
		echo "docs: the screenshot needs chromium (apt-get install chromium)" >&2
		exit 1
	fi
fi

mkdir -p "$out"
cp "$from/comment.md" "$out/example-comment.md"
cp "$tmp/history.blank.html" "$out/history.html"
"$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync \
	--hide-scrollbars --user-data-dir="$tmp/chromium" --window-size=1280,1500 \
	--screenshot="$PWD/$out/history.png" "$page" >"$tmp/chromium.log" 2>&1 ||
	{ tail "$tmp/chromium.log" >&2; echo "docs: the screenshot failed" >&2; exit 1; }
echo "wrote $out/example-comment.md, $out/history.png and $out/history.html"
