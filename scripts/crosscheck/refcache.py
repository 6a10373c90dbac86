"""The reference's results kept outside the repository (issue 53).

The float64 reference and lm-eval recompute the same numbers from the same
pinned inputs on every run; they were most of make crosscheck's time. A
result is stored under a hash of everything that decides it: the
checkpoint's files (weights, config, tokenizer), the documents and items,
the code that computes it (the modules named and the calling function's
source), the pinned environment (scripts/pyref/requirements.txt, the
Python version) and what may move float64's last bits (torch's threads,
the CPU's name and torch's kernel level). The comparison with udgam-ci
runs every time; only the reference's side is read back.

UDGAM_REFERENCE_CACHE: "on" (the default), "off" (neither read nor
written), or "verify" (computed anyway, and a stored result that differs
by one bit fails the run: the check that the key holds all it must).
"""

import hashlib
import json
import os
import platform
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LOCK = os.path.join(ROOT, "scripts", "pyref", "requirements.txt")


def mode():
    m = os.environ.get("UDGAM_REFERENCE_CACHE", "on")
    if m not in ("on", "off", "verify"):
        raise SystemExit("UDGAM_REFERENCE_CACHE=%r: on, off or verify" % m)
    return m


def directory():
    base = os.environ.get("UDGAM_CI_BUILD_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "udgam-ci")
    return os.path.join(base, "reference")


def _file(h, path):
    h.update(b"file %d %s\n" % (os.path.getsize(path), os.path.basename(path).encode()))
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)


def _cpu():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.machine()


def tree(ckpt):
    """A hash of a checkpoint's files, names and bytes; taken as it is
    saved, before udgam-ci writes its runs beside them."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(ckpt):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            h.update(os.path.relpath(path, ckpt).encode() + b"\n")
            _file(h, path)
    return h.hexdigest()


def key(kind, ckpt_tree, inputs, code_files, function_source):
    """The hash a result of kind is stored under."""
    import torch

    h = hashlib.sha256()
    h.update(("%s\n" % kind).encode())
    for path in [os.path.abspath(__file__), LOCK] + list(code_files):
        _file(h, path)
    h.update(function_source.encode())
    h.update(("python %s\ntorch threads %d\ncpu %s\ncapability %s\n" % (
        sys.version, torch.get_num_threads(), _cpu(), torch.backends.cpu.get_cpu_capability())).encode())
    h.update(("checkpoint %s\n" % ckpt_tree).encode())
    h.update(json.dumps(inputs, sort_keys=True, ensure_ascii=False).encode())
    return h.hexdigest()[:32]


def cached(kind, ckpt_tree, inputs, code_files, function_source, compute):
    """compute()'s result (JSON-able), read back when stored under the same
    key (ckpt_tree: tree's hash of the checkpoint); stats counts them."""
    m = mode()
    if m == "off":
        return compute()
    k = key(kind, ckpt_tree, inputs, code_files, function_source)
    path = os.path.join(directory(), "%s-%s.json" % (kind, k))
    old = None
    if os.path.exists(path):
        with open(path) as f:
            old = json.load(f)
        if m == "on":
            stats["hits"] += 1
            return old
    # Stored as JSON and read back as JSON, so that a verified result and a
    # stored one are the same values (floats round-trip exactly).
    got = json.loads(json.dumps(compute()))
    stats["computed"] += 1
    if old is not None:
        if old != got:
            raise RuntimeError("reference cache: %s differs from the result computed now: %s" % (path, first_difference(old, got)))
        stats["verified"] += 1
        return got
    os.makedirs(directory(), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(got, f)
    os.replace(path + ".tmp", path)
    return got


def first_difference(a, b, where="result"):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                return first_difference(a.get(k), b.get(k), "%s[%r]" % (where, k))
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return first_difference(x, y, "%s[%d]" % (where, i))
    return "%s: stored %r, now %r" % (where, a, b)


stats = {"hits": 0, "computed": 0, "verified": 0}


def summary():
    return "reference cache (%s, %s): %d read back, %d computed, %d of them checked against the stored result" % (
        mode(), directory(), stats["hits"], stats["computed"], stats["verified"])
