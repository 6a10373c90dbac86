#!/usr/bin/env bash
# Installs GitHub's own OpenAPI description of its REST API (npm package
# @octokit/openapi, pinned below by version and the tarball's sha256) into a
# cache outside the repository: only generated/api.github.com.json (13 MB)
# is kept of the 29 MB tarball. action/actiontest holds its fake GitHub to
# it. Prints the file's path on its last line. Idempotent and safe to run
# from several test processes at once (flock, then an atomic rename).
set -euo pipefail
version=23.0.2
sha256=71a18407dd5e8464f4e0525daf03deabbe65abd9287d6adc7b5d98f516cd0d0c
cache="${UDGAM_NPM_CACHE:-${HOME:-/tmp}/.cache/udgam-ci/npm}"
dest="$cache/octokit-openapi-$version"
file="$dest/api.github.com.json"

if [ -s "$file" ] && [ "$(cat "$dest/.stamp" 2>/dev/null)" = "$sha256" ]; then
	echo "$file"
	exit 0
fi
command -v npm >/dev/null 2>&1 || { echo "ghapi: npm is not installed (apt-get install npm)" >&2; exit 1; }

mkdir -p "$cache"
exec 9>"$cache/ghapi.lock"
flock 9
if [ -s "$file" ] && [ "$(cat "$dest/.stamp" 2>/dev/null)" = "$sha256" ]; then
	echo "$file"
	exit 0
fi

tmp="$(mktemp -d "$cache/ghapi.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
echo "ghapi: downloading @octokit/openapi@$version into $dest" >&2
(cd "$tmp" && npm pack "@octokit/openapi@$version" --silent --no-audit --no-fund --loglevel=error >/dev/null)
tgz="$tmp/octokit-openapi-$version.tgz"
got="$(sha256sum "$tgz" | cut -d' ' -f1)"
if [ "$got" != "$sha256" ]; then
	echo "ghapi: @octokit/openapi@$version has sha256 $got, want $sha256" >&2
	exit 1
fi
tar -xzf "$tgz" -C "$tmp" package/generated/api.github.com.json
mkdir "$tmp/out"
mv "$tmp/package/generated/api.github.com.json" "$tmp/out/"
echo "$sha256" >"$tmp/out/.stamp"
rm -rf "$dest.old"
[ -e "$dest" ] && mv "$dest" "$dest.old"
mv "$tmp/out" "$dest"
rm -rf "$dest.old"
echo "$file"
