"""Tiny random checkpoints built with transformers' own classes.

For an architecture (archs.py): its config file with the sizes replaced,
vocab_size set to the tokenizer's size, the class named by
`architectures` instantiated from it with a fixed seed, the weights made
larger than the training initialisation (so the logits are far from
uniform and a misread option shows), every one-dimensional parameter
(norm scales, biases, SSM A/D/dt) moved off its initial constant, and then
saved with save_pretrained as users' checkpoints are saved: float32 and
bfloat16, safetensors and pytorch_model.bin, whole and sharded, beside the
real tokenizer files.
"""

import json
import os
import shutil

import torch
import transformers

# The weight layouts: (name, torch pickle, sharded). transformers 5 saves
# safetensors only; pytorch_model.bin is written as transformers 4's
# save_pretrained wrote it (torch.save of the same state dict save_pretrained
# kept, tied duplicates already left out; shards named
# pytorch_model-0000i-of-0000n.bin with pytorch_model.bin.index.json).
FORMATS = [
    ("safetensors", False, False),
    ("sharded-safetensors", False, True),
    ("pytorch", True, False),
    ("sharded-pytorch", True, True),
]

TOKENIZER_FILES = ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.model", "vocab.json", "merges.txt"]


def tokenizer_size(tok_dir):
    with open(os.path.join(tok_dir, "tokenizer.json")) as f:
        tj = json.load(f)
    n = max(tj["model"]["vocab"].values()) + 1 if isinstance(tj["model"]["vocab"], dict) else len(tj["model"]["vocab"])
    for a in tj.get("added_tokens", []):
        n = max(n, a["id"] + 1)
    return n


def copy_tokenizer(arch, tok_dir, dest):
    for name in TOKENIZER_FILES:
        src = os.path.join(tok_dir, name)
        if os.path.exists(src):
            shutil.copyfile(src, os.path.join(dest, name))
    if arch.no_bos:
        # The tokenizer has no BOS (as Qwen's and Falcon-H1-Tiny's have
        # none): bos_token null. Left out, transformers would take the
        # class's default (GPT2Tokenizer's is <|endoftext|>).
        for name in ("tokenizer_config.json", "special_tokens_map.json"):
            path = os.path.join(dest, name)
            if os.path.exists(path):
                with open(path) as f:
                    tc = json.load(f)
                tc["bos_token"] = None
                tc["add_bos_token"] = False
                with open(path, "w") as f:
                    json.dump(tc, f, indent=2)


def make_config(arch, vocab):
    with open(arch.config) as f:
        raw = json.load(f)
    raw.update(arch.shrink)
    raw["vocab_size"] = vocab
    # Token ids of the original vocabulary that the tokenizer here lacks
    # (they change no math; an out-of-range padding id is refused).
    for k in ("bos_token_id", "eos_token_id", "pad_token_id"):
        if isinstance(raw.get(k), int) and raw[k] >= vocab:
            raw[k] = None
    # Not the model's math: the initialisation's scale.
    raw["initializer_range"] = 0.2
    cls = getattr(transformers, raw["architectures"][0])
    cfg = cls.config_class.from_dict(raw)
    return cls, cfg


def make_model(arch, vocab, seed):
    cls, cfg = make_config(arch, vocab)
    torch.manual_seed(seed)
    model = cls(cfg)
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim == 1:
                p.add_(0.2 * torch.randn(p.shape, generator=gen, dtype=p.dtype))
    model.eval()
    return model


def save(model, dest, dtype, fmt, tok_dir, arch):
    """Writes one checkpoint; returns its directory."""
    name, pickle, shard = fmt
    out = os.path.join(dest, "%s-%s" % ({torch.float32: "f32", torch.bfloat16: "bf16"}[dtype], name))
    os.makedirs(out, exist_ok=True)
    m = model.to(dtype)
    size = sum(p.numel() * p.element_size() for p in m.parameters())
    kw = {"max_shard_size": size // 2 + 1} if shard else {}
    m.save_pretrained(out, **kw)
    if pickle:
        to_torch(out)
    copy_tokenizer(arch, tok_dir, out)
    return out


def to_torch(out):
    """Replaces the safetensors files in out by pytorch_model*.bin files
    holding the same tensors under the same names, shard for shard."""
    from safetensors.torch import load_file

    index = os.path.join(out, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            idx = json.load(f)
        files = sorted(set(idx["weight_map"].values()))
        n = len(files)
        rename = {old: "pytorch_model-%05d-of-%05d.bin" % (i + 1, n) for i, old in enumerate(files)}
        for old, new in rename.items():
            torch.save(load_file(os.path.join(out, old)), os.path.join(out, new))
            os.remove(os.path.join(out, old))
        idx["weight_map"] = {k: rename[v] for k, v in idx["weight_map"].items()}
        with open(os.path.join(out, "pytorch_model.bin.index.json"), "w") as f:
            json.dump(idx, f, indent=2)
        os.remove(index)
    else:
        path = os.path.join(out, "model.safetensors")
        torch.save(load_file(path), os.path.join(out, "pytorch_model.bin"))
        os.remove(path)
