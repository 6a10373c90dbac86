"""make bench-pytorch: the speed peer. What a user would run instead of
udgam-ci: the reference scorer (refscore.py) in float32 on CPU with
torch's threads set to udgam-ci's, against `score fresh` and
`score probes`, back to back on one SmolLM2-135M-shaped random model (the
SmolLM2-135M config at full size, built with LlamaForCausalLM; its
vocabulary is the GPT-2 tokenizer's 50,257 instead of 49,152), the same
documents and items. Prints one line per scorer and the ratios
(BENCHMARKS.md).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import archs as archmod  # noqa: E402
import build  # noqa: E402
import crosscheck  # noqa: E402
import refscore  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--docs", type=int, default=30, help="smoke documents scored")
    ap.add_argument("--items", type=int, default=42, help="core items scored (the first of every type and level, then the next)")
    ap.add_argument("--work", help="keep the model here")
    a = ap.parse_args()

    import torch
    torch.set_num_threads(a.threads)
    work = a.work or tempfile.mkdtemp(prefix="udgam-bench-pytorch-")
    tok_dir = crosscheck.hfref_dirs()["gpt2"]
    arch = archmod.Arch("smollm2-135m", os.path.join(archmod.TESTDATA, "configs", "smollm2-135m.json"), {})
    ckpt = os.path.join(work, "f32-safetensors")
    if not os.path.exists(os.path.join(ckpt, "model.safetensors")):
        model = build.make_model(arch, build.tokenizer_size(tok_dir), seed=1)
        build.save(model, work, torch.float32, build.FORMATS[0], tok_dir, arch)
        del model
    gguf = os.path.join(work, "model.gguf")
    if not os.path.exists(gguf):
        subprocess.run([a.bin, "model", "convert", ckpt, "--out", gguf, "--dtype", "f32"], check=True, capture_output=True)

    with open(crosscheck.SMOKE) as f:
        docs = [json.loads(line) for line in f][: a.docs]
    with open(crosscheck.CORE) as f:
        core = [json.loads(line) for line in f]
    items = core[:: max(len(core) // a.items, 1)][: a.items]
    docs_path, items_path = os.path.join(work, "docs.jsonl"), os.path.join(work, "items.jsonl")
    for path, recs in ((docs_path, docs), (items_path, items)):
        with open(path, "w") as f:
            for r in recs:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")

    def udgam(test, flag, path):
        out = os.path.join(work, test + ".jsonl")
        if os.path.exists(out):
            os.remove(out)
        c0 = children_cpu()
        t = time.perf_counter()
        p = subprocess.run([a.bin, "score", test, "--model", gguf, flag, path, "--out", out, "--threads", str(a.threads), "--gpu", "cpu", "--json"],
                           check=True, capture_output=True, text=True)
        wall = time.perf_counter() - t
        return wall, children_cpu() - c0, json.loads(p.stdout.strip().splitlines()[-1])

    tok, model = refscore.load(ckpt, dtype=torch.float32)
    sc = refscore.Scorer(model, chunk=1 << 20)  # float32: no need to bound the logits

    t, c = time.perf_counter(), time.process_time()
    ref_docs = [refscore.fresh_doc(sc, tok, d["text"]) for d in docs]
    ref_fresh, ref_fresh_cpu = time.perf_counter() - t, time.process_time() - c
    u_fresh, u_fresh_cpu, fs = udgam("fresh", "--data", docs_path)
    t, c = time.perf_counter(), time.process_time()
    ref_items = [refscore.probe_item(sc, tok, it) for it in items]
    ref_probes, ref_probes_cpu = time.perf_counter() - t, time.process_time() - c
    u_probes, u_probes_cpu, ps = udgam("probes", "--items", items_path)

    tokens = sum(r["tokens"] for r in ref_docs)
    # Probe tokens scored: every choice's continuation tokens.
    ptokens = sum(sum(r["tokens"]) for r in ref_items)
    print("speed peer: SmolLM2-135M-shaped random model, float32, %d threads, %s" % (a.threads, cpu_name()))
    print("Fresh Text, %d documents, %d scored tokens: PyTorch reference %.1f s (%.1f tokens/s), udgam-ci %.1f s wall (%.1f tokens/s): %.1fx"
          % (len(docs), tokens, ref_fresh, tokens / ref_fresh, u_fresh, tokens / u_fresh, ref_fresh / u_fresh))
    print("Probe Suite, %d items, %d choice tokens: PyTorch reference %.1f s (%.2f items/s), udgam-ci %.1f s wall (%.2f items/s): %.1fx"
          % (len(items), ptokens, ref_probes, len(items) / ref_probes, u_probes, len(items) / u_probes, ref_probes / u_probes))
    print("(udgam-ci's wall time includes loading the model; its own summary says %.1f s and %.1f s)" % (fs.get("seconds", 0), ps.get("seconds", 0)))
    print("CPU-seconds (robust to other work on the machine): Fresh Text reference %.1f, udgam-ci %.1f: %.1fx; Probe Suite reference %.1f, udgam-ci %.1f: %.1fx"
          % (ref_fresh_cpu, u_fresh_cpu, ref_fresh_cpu / u_fresh_cpu, ref_probes_cpu, u_probes_cpu, ref_probes_cpu / u_probes_cpu))
    print("load average at the end: %s" % " ".join("%.1f" % x for x in os.getloadavg()))


def children_cpu():
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


if __name__ == "__main__":
    main()
