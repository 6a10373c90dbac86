#!/usr/bin/env bash
# make crosscheck: udgam-ci judged by the reference stack itself (issue 26).
# Installs the pinned Python environment (scripts/pyref, cached outside the
# repository), then crosscheck.py builds tiny random models with
# transformers' own classes, converts and scores them with bin/udgam-ci, and
# compares every document and choice with the float64 reference scorer and
# with lm-evaluation-harness. Arguments go to crosscheck.py (--archs,
# --layouts, --work DIR to keep the files, --json FILE, --no-lmeval).
set -euo pipefail
cd "$(dirname "$0")/../.."
venv="$(bash scripts/pyref/install.sh | tail -1)"
# No hub, no progress bars, no tokenizer threads beyond torch's.
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_VERBOSITY=error HF_HUB_DISABLE_PROGRESS_BARS=1 \
	HF_DATASETS_DISABLE_PROGRESS_BARS=1 TQDM_DISABLE=1 TOKENIZERS_PARALLELISM=false
# --bench: the speed peer (make bench-pytorch) instead.
if [ "${1:-}" = "--bench" ]; then
	shift
	exec "$venv/bin/python" scripts/crosscheck/bench.py --bin bin/udgam-ci "$@"
fi
exec "$venv/bin/python" scripts/crosscheck/crosscheck.py --bin bin/udgam-ci "$@"
