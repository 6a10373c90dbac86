"""The reference's results, kept in the repository and outside it (issue 53).

The float64 reference and lm-eval recompute the same numbers from the same
pinned inputs on every run; they were most of make crosscheck's time, and a
fresh CI runner has no cache. A result is stored under a hash of everything
that decides it: the checkpoint's files (weights, config, tokenizer), the
documents and items, the code that computes it (the modules named and the
calling function's source), this key's own definition, the pinned environment
(scripts/pyref/requirements.txt) and Python's minor version. The comparison
with udgam-ci runs every time; only the reference's side is read back.

Results are looked up in scripts/crosscheck/pinned/ (committed, gzipped
JSON: found on any machine) and then in this machine's cache. The key
leaves out what moves only float64's last bits (torch's threads, the CPU),
so that pinned values are found on any runner; verify compares at VERIFY_REL
for that reason, far below crosscheck's tolerance.

UDGAM_REFERENCE_CACHE: "on" (the default), "off" (neither read nor
written), "verify" (computed anyway, and a stored result that differs past
VERIFY_REL fails the run: the check that the key holds all it must), or
"pin" (as "on", and every result the run used is written to pinned/; a full
run also removes the pinned results it did not use: `make crosscheck-pin`).
"""

import gzip
import hashlib
import inspect
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LOCK = os.path.join(ROOT, "scripts", "pyref", "requirements.txt")
PINNED = os.path.join(HERE, "pinned")
MODES = ("on", "off", "verify", "pin")
# float64 results recomputed on another CPU or with other threads differ
# in their last bits (1e-16); crosscheck's tolerance is 1e-4 nats per token.
VERIFY_REL = 1e-12


def mode():
    m = os.environ.get("UDGAM_REFERENCE_CACHE", "on")
    if m not in MODES:
        raise SystemExit("UDGAM_REFERENCE_CACHE=%r: one of %s" % (m, ", ".join(MODES)))
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
    h = hashlib.sha256()
    h.update(("%s\n" % kind).encode())
    # This function's source, not this file's: a change to how results are
    # stored or reported keeps the pinned ones.
    h.update(inspect.getsource(key).encode())
    for path in [LOCK] + list(code_files):
        _file(h, path)
    h.update(function_source.encode())
    h.update(("python %d.%d\n" % sys.version_info[:2]).encode())
    h.update(("checkpoint %s\n" % ckpt_tree).encode())
    h.update(json.dumps(inputs, sort_keys=True, ensure_ascii=False).encode())
    return h.hexdigest()[:32]


def _read(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def _write(path, value, compress):
    data = json.dumps(value).encode()
    if compress:
        # mtime 0: a pinned file's bytes depend on its value alone.
        data = gzip.compress(data, mtime=0)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)


def cached(kind, ckpt_tree, inputs, code_files, function_source, compute):
    """compute()'s result (JSON-able), read back when stored under the same
    key (ckpt_tree: tree's hash of the checkpoint), pinned or in this
    machine's cache; stats counts them."""
    m = mode()
    if m == "off":
        return compute()
    if verifying and m == "on":
        m = "verify"
    name = "%s-%s" % (kind, key(kind, ckpt_tree, inputs, code_files, function_source))
    pinned = os.path.join(PINNED, name + ".json.gz")
    local = os.path.join(directory(), name + ".json")
    used.add(os.path.basename(pinned))
    old, where = None, None
    for path, w in ((pinned, "pinned"), (local, "local")):
        if os.path.exists(path):
            old, where = _read(path), w
            break
    if old is not None and m != "verify":
        stats[where] += 1
        if m == "pin" and where != "pinned":
            _write(pinned, old, True)
        return old
    # Stored as JSON and read back as JSON, so that a verified result and a
    # stored one are the same values (floats round-trip exactly).
    got = json.loads(json.dumps(compute()))
    stats["computed"] += 1
    if old is not None:
        diff = first_difference(old, got)
        if diff:
            raise RuntimeError("reference cache: %s differs from the result computed now: %s" % (
                pinned if where == "pinned" else local, diff))
        stats["verified"] += 1
        return got
    _write(local, got, False)
    if m == "pin":
        _write(pinned, got, True)
    return got


def prune_pinned():
    """Removes the pinned results this run did not use (a full run's)."""
    gone = 0
    for f in sorted(os.listdir(PINNED)) if os.path.isdir(PINNED) else []:
        if f.endswith(".json.gz") and f not in used:
            os.remove(os.path.join(PINNED, f))
            gone += 1
    return gone


def first_difference(a, b, where="result"):
    """Where a and b first differ ("" where they do not): numbers past
    VERIFY_REL of the larger, anything else at all."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            d = first_difference(a.get(k), b.get(k), "%s[%r]" % (where, k))
            if d:
                return d
        return ""
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, "%s[%d]" % (where, i))
            if d:
                return d
        return ""
    num = (int, float)
    if isinstance(a, num) and isinstance(b, num) and not isinstance(a, bool) and not isinstance(b, bool):
        if a == b or abs(a - b) <= VERIFY_REL * max(abs(a), abs(b)):
            return ""
    elif a == b:
        return ""
    return "%s: stored %r, now %r" % (where, a, b)


stats = {"pinned": 0, "local": 0, "computed": 0, "verified": 0}
used = set()
# Set while one case's results are computed again and compared with the
# stored ones, as "verify" does for all (crosscheck --verify-arch).
verifying = False


def summary():
    text = "reference results (%s): %d pinned in the repository, %d from %s, %d computed, %d of them checked against the stored result" % (
        mode(), stats["pinned"], stats["local"], directory(), stats["computed"], stats["verified"])
    unpinned = sum(not os.path.exists(os.path.join(PINNED, n)) for n in used)
    if mode() == "on" and unpinned:
        text += "; %d not pinned: `make crosscheck-pin` writes them to %s" % (unpinned, os.path.relpath(PINNED, ROOT))
    return text
