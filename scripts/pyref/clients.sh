#!/usr/bin/env bash
# Installs the API clients that judge the Fresh Text builder's recorded
# arXiv and Wikipedia answers (evals/fresh/build/testdata/README.md):
# arxiv.py (arXiv's own Python client; lxml and requests come from the
# reference stack) and mwclient with its OAuth dependencies. They go into
# a folder of their own under the cache, pinned by version and sha256
# (pip --require-hashes), beside the reference stack rather than into it,
# so the stack's pinned environment stays as it is. Prints the folder (for
# PYTHONPATH) on its last line. Safe to run from several processes at once.
# usage: clients.sh PYTHON
set -euo pipefail
py="${1:?usage: clients.sh PYTHON}"
cache="${UDGAM_CI_BUILD_CACHE:-${HOME:-/tmp}/.cache/udgam-ci}"
reqs='arxiv==4.0.2 --hash=sha256:c6f2af32dd3a776815e26da559f164872ec029fd891d917fecd6a196b34149fc
mwclient==0.11.0 --hash=sha256:27914a307cb4539fd49a16d634c9c777c0de0976b3af9225bd95d4657bfd4d74
requests-oauthlib==2.0.0 --hash=sha256:7dd8a5c40426b779b0868c404bdef9768deccf22749cde15852df527e6269b36
oauthlib==4.0.1 --hash=sha256:498a298876e996301950a5b053d12c31628bb7b895db03666430c69ce182eb61'
dest="$cache/pyclients-$(printf '%s\n' "$reqs" | sha256sum | cut -c1-12)"
if [ -f "$dest/.complete" ]; then
	echo "$dest"
	exit 0
fi
mkdir -p "$cache"
exec 9>"$cache/pyclients.lock"
flock 9
if [ -f "$dest/.complete" ]; then
	echo "$dest"
	exit 0
fi
tmp="$(mktemp -d "$dest.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
printf '%s\n' "$reqs" >"$tmp/requirements.txt"
echo "pyclients: installing arxiv 4.0.2 and mwclient 0.11.0 into $dest" >&2
"$py" -m pip install --quiet --disable-pip-version-check --no-deps --require-hashes \
	--target "$tmp/lib" -r "$tmp/requirements.txt" >&2
mv "$tmp/lib" "$tmp/out"
touch "$tmp/out/.complete"
rm -rf "$dest"
mv "$tmp/out" "$dest"
echo "$dest"
