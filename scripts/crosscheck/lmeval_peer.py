"""The peer harness: lm-evaluation-harness (its `hf` backend) on the same
tiny checkpoint, the Probe Suite written as a local lm-eval task
(multiple choice, the prompt as context, the choices after a " "
delimiter), compared per item with udgam-ci's run and the reference.

Where lm-eval's defaults differ from the seed's definition (docs/reference-stack.md):
- BOS: lm-eval encodes the context with the tokenizer's own special-token
  rule (its post-processor): a Llama-style tokenizer gets BOS, a GPT-2
  style one does not, although it has a bos_token. The seed puts BOS first
  whenever the tokenizer has one. Set alike: the BOS text is written at the
  start of the context; lm-eval then adds no special tokens (it sees the
  BOS already there).
- The continuation: lm-eval tokenizes context + continuation together and
  takes the tokens after the context's; the seed tokenizes " " + choice on
  its own. They agree where the tokenizer splits at that space anyway
  (byte-level BPE); a SentencePiece normalizer that prepends "▁" gives
  different tokens. Items whose tokens differ are counted and left out of
  the comparison, since no lm-eval setting makes them alike.
- acc_norm: lm-eval divides by the choice's length in characters, without
  the delimiter; udgam-ci by the UTF-8 bytes of " " + choice. Both are
  recomputed here from the same log-likelihoods.
"""

import json
import os

TASK = """task: udgam_probes
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{context}}}}"
doc_to_choice: "{{{{choices}}}}"
doc_to_target: "{{{{choices.index(answer)}}}}"
target_delimiter: " "
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
  - metric: acc_norm
    aggregation: mean
    higher_is_better: true
"""


def write_task(work, name, items, bos_text):
    """A task directory whose items' context is bos_text + prompt."""
    d = os.path.join(work, "lmeval-" + name)
    os.makedirs(d, exist_ok=True)
    data = os.path.join(d, "items.jsonl")
    with open(data, "w") as f:
        for it in items:
            f.write(json.dumps({"id": it["id"], "context": bos_text + it["prompt"], "choices": it["choices"], "answer": it["answer"]},
                               ensure_ascii=False) + "\n")
    with open(os.path.join(d, "udgam_probes.yaml"), "w") as f:
        f.write(TASK.format(data=data))
    return d


def run(ckpt, items, bos_text, work, name, dtype="float64"):
    """lm-eval's per-item log-likelihoods: {id: [ll per choice]}."""
    import lm_eval
    from lm_eval.tasks import TaskManager

    d = write_task(work, name, items, bos_text)
    res = lm_eval.simple_evaluate(
        model="hf",
        model_args={"pretrained": ckpt, "dtype": dtype, "attn_implementation": "eager"},
        tasks=["udgam_probes"], task_manager=TaskManager(include_path=d),
        batch_size=1, device="cpu", log_samples=True,
    )
    out = {}
    for s in res["samples"]["udgam_probes"]:
        out[s["doc"]["id"]] = [float(r[0][0]) for r in s["resps"]]
    return out, res["results"]["udgam_probes"]


def continuation_alike(tok, items, bos):
    """Ids of the items whose choices lm-eval tokenizes as the seed does
    (context + continuation split after the context's tokens)."""
    from refscore import encode

    same = set()
    for it in items:
        ok = True
        for c in it["choices"]:
            whole = encode(tok, it["prompt"] + " " + c)
            ctx = encode(tok, it["prompt"])
            if whole[:len(ctx)] != ctx or whole[len(ctx):] != encode(tok, " " + c):
                ok = False
        if ok:
            same.add(it["id"])
    return same


def pick(lls):
    best = 0
    for i in range(1, len(lls)):
        if lls[i] > lls[best]:
            best = i
    return best


def compare(lm, want, ntoks, ids):
    """Largest per-token difference and the items picked differently."""
    worst, flips = 0.0, []
    for iid in ids:
        a, b = lm[iid], want[iid]
        for x, y, n in zip(a, b, ntoks[iid]):
            worst = max(worst, abs(x - y) / n)
        if pick(a) != pick(b):
            flips.append(iid)
    return worst, flips
