#!/usr/bin/env bash
# install.sh installs what `make action-e2e` needs outside the repository,
# under ${UDGAM_CI_BUILD_CACHE:-~/.cache/udgam-ci}, once per machine: act
# (nektos/act, a tool built from the Go module proxy, not a dependency of
# the module) and the actions/cache stand-in of cache-action/ with its
# npm packages, pinned by package-lock.json. Prints act's path, then the
# stand-in action's folder.
set -euo pipefail
fail() { echo "acte2e/install.sh: $*" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
cache=${UDGAM_CI_BUILD_CACHE:-$HOME/.cache/udgam-ci}
act_version=v0.2.89
mkdir -p "$cache"
# Checkouts side by side install once.
exec 9>"$cache/acte2e.lock"
flock 9

act_dir=$cache/act-$act_version
if [ ! -x "$act_dir/act" ]; then
	command -v go >/dev/null || fail "needs go"
	# Outside the module and its workspace; the Makefile's cgo flags are
	# for llama.cpp.
	(cd "$cache" && env -u GOFLAGS GOWORK=off CGO_ENABLED=0 GOBIN="$act_dir" \
		go install "github.com/nektos/act@$act_version") >&2 || fail "go install act $act_version failed"
fi

# Keyed by the stand-in's files: an edit installs it anew. Bundled into
# one file per step with esbuild, as actions/cache ships its dist/: act
# copies an action's folder for each step, node_modules would be 50 MB.
src=$here/cache-action
key=$(cd "$src" && cat action.yml restore.js save.js package.json package-lock.json | sha256sum | cut -c1-16)
dir=$cache/act-cache-action-$key
if [ ! -f "$dir/.installed" ]; then
	command -v npm >/dev/null || fail "needs npm (Debian: apt-get install npm)"
	rm -rf "$dir"
	mkdir -p "$dir/action/dist"
	cp "$src"/restore.js "$src"/save.js "$src"/package.json "$src"/package-lock.json "$dir"/
	cp "$src"/action.yml "$dir"/action/
	(cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error &&
		for f in restore save; do
			node_modules/.bin/esbuild "$f.js" --bundle --platform=node --target=node20 --log-level=warning --outfile="action/dist/$f.js" || exit 1
		done) >&2 || fail "installing the actions/cache stand-in in $dir failed"
	touch "$dir/.installed"
fi
echo "$act_dir/act"
echo "$dir/action"
