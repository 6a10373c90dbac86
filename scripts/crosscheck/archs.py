"""The architectures crosschecked: each is a real config file, shrunk in
width and depth only (every option that changes the math kept), and the
real tokenizer files the tiny model carries.

Configs come from convert/testdata/configs (their README says where each
was found) or, for the four the converter's tests have none of,
scripts/crosscheck/configs (README.md there: reconstructed).
"""

import os

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TESTDATA = os.path.join(ROOT, "convert", "testdata")
OWN = os.path.join(ROOT, "scripts", "crosscheck", "configs")


class Arch:
    def __init__(self, name, config, shrink, tokenizer="gpt2", no_bos=False, window=2048, stride=1024, note="", refused=None):
        self.name = name
        self.config = config  # path
        self.shrink = shrink  # keys replaced: sizes only
        self.tokenizer = tokenizer  # hfref family
        self.no_bos = no_bos  # tokenizer_config without bos_token
        self.window = window
        self.stride = stride
        self.note = note
        # refused: udgam-ci must refuse to convert it, with this text in
        # its error (an option it does not implement); anything else fails.
        self.refused = refused


def _td(name):
    return os.path.join(TESTDATA, "configs", name)


def _own(name):
    return os.path.join(OWN, name)


# Sizes: about 64 wide, 2 layers (more where the layer pattern needs
# them), head counts in the original's ratios, head_dim kept apart from
# hidden/heads where the original has it so.
ARCHS = [
    Arch("smollm2", _td("smollm2-135m.json"),
         dict(hidden_size=48, intermediate_size=96, num_hidden_layers=2, num_attention_heads=3, num_key_value_heads=1)),
    Arch("mistral", _own("mistral-7b-v0.1.json"),
         dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=2),
         tokenizer="mistral"),
    Arch("llama", _td("llama-384m.json"),
         dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16)),
    # Qwen's own tokenizer: transformers 5 tokenizes a qwen2 checkpoint
    # with Qwen2Tokenizer, which builds Qwen's pre-tokenizer whatever
    # tokenizer.json says (docs/reference-stack.md, "Findings").
    Arch("qwen2", _td("qwen2-384m.json"),
         dict(hidden_size=56, intermediate_size=112, num_hidden_layers=2, num_attention_heads=7, num_key_value_heads=1, max_window_layers=2),
         tokenizer="qwen3"),
    Arch("qwen3", _td("qwen3-384m.json"),
         dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_window_layers=2),
         tokenizer="qwen3"),
    # The 270M's query scale is its head_dim (query_pre_attn_scalar 256 =
    # head_dim 256), kept so at head_dim 32; udgam-ci refuses any other
    # (llama.cpp's gemma3 scales by head_dim), checked by gemma3-qscale.
    Arch("gemma3", _td("gemma3-270m.json"),
         dict(hidden_size=64, intermediate_size=128, num_hidden_layers=6, num_attention_heads=4, num_key_value_heads=1, head_dim=32,
              query_pre_attn_scalar=32, layer_types=["sliding_attention"] * 5 + ["full_attention"])),
    Arch("gemma3-qscale", _td("gemma3-270m.json"),
         dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1, head_dim=32,
              layer_types=["sliding_attention", "full_attention"]),
         refused="query_pre_attn_scalar = 256 is not supported", note="query_pre_attn_scalar 256 at head_dim 32: refused"),
    # GPT-2 has 1,024 learned positions: its windows are 1,024 sliding by 512.
    Arch("gpt2", _td("gpt2.json"), dict(n_embd=64, n_head=4, n_layer=2), window=1024, stride=512),
    Arch("gptneox", _td("pythia-160m.json"),
         dict(hidden_size=64, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4)),
    Arch("olmo", _td("olmo-1b-hf.json"),
         dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4)),
    # OLMo-1B has no clip; later OLMo 1 models clip q, k and v. The same
    # file with clip_qkv set checks the clamp.
    Arch("olmo-clip", _td("olmo-1b-hf.json"),
         dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4, clip_qkv=0.25),
         note="clip_qkv 0.25 added"),
    Arch("olmo2", _own("olmo-2-0425-1b.json"),
         dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4)),
    Arch("falcon-h1", os.path.join(TESTDATA, "falcon-h1-tiny-90m-base.json"),
         dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1, head_dim=16,
              mamba_d_ssm=96, mamba_n_heads=6, mamba_d_head=16, mamba_d_state=16),
         no_bos=True),
    Arch("mamba", _own("mamba-130m-hf.json"),
         dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, time_step_rank=4)),
    Arch("mamba2", _own("mamba2-130m-hf.json"),
         dict(hidden_size=64, num_hidden_layers=2, num_heads=8, head_dim=16, state_size=16)),
    Arch("lfm2", _td("lfm2-350m.json"),
         dict(hidden_size=64, block_dim=64, conv_dim=64, conv_dim_out=64, block_ff_dim=256, num_hidden_layers=4,
              full_attn_idxs=[2], num_attention_heads=4, num_heads=4, num_key_value_heads=2)),
]


def by_name(names):
    if not names:
        return ARCHS
    want = set(names)
    got = [a for a in ARCHS if a.name in want]
    missing = want - {a.name for a in got}
    if missing:
        raise SystemExit("unknown architecture(s): %s (have %s)" % (", ".join(sorted(missing)), ", ".join(a.name for a in ARCHS)))
    return got
