"""The reference scorer: Fresh Text and the Probe Suite computed with
PyTorch and Hugging Face transformers, written from the seed's definitions
(DESIGN.md, "The two tests"), not from udgam-ci's code.

Fresh Text: each document alone, BOS first when the tokenizer has one;
windows of `window` tokens sliding by `stride`, the first window scoring
every token it has context for, each later one only the tokens past the
previous window's end, so every token is scored exactly once; bits over
the document's UTF-8 bytes. Without BOS the first token has no context: it
is not scored, and the bytes it covers are left out (udgam-ci's no-BOS
formulation, recorded in its run header): its own bytes, also where a
byte-level token ends inside a character.

Probe Suite: the prompt after BOS (when the tokenizer has one), then each
choice as " " + choice tokenized on its own without special tokens and
appended; the choice's summed log-probability; the highest wins (the first
of equal ones, a tie).

Python is the judge only; nothing in udgam-ci imports or runs this.
"""

import json
import math

import torch

LN2 = math.log(2.0)


def bos_of(tok):
    """The BOS id to put first, or None: BOS when the tokenizer has one."""
    return tok.bos_token_id


def encode(tok, text):
    """Token ids of text, no special tokens added (added tokens in the text
    are still matched, the normalizer applied)."""
    return tok(text, add_special_tokens=False)["input_ids"]


def token_bytes(tok, tid):
    """The bytes token tid stands for: an added token's literal, or a
    byte-level token's bytes, its piece read back through transformers'
    own byte-to-character table. Other kinds are not needed here (every
    no-BOS tokenizer crosschecked is byte-level) and raise."""
    added = tok.added_tokens_decoder.get(tid)
    if added is not None:
        return added.content.encode("utf-8")
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    backend = json.loads(tok.backend_tokenizer.to_str())
    if (backend.get("decoder") or {}).get("type") != "ByteLevel":
        raise NotImplementedError("first token bytes without BOS: only byte-level tokenizers are known to the reference")
    to_byte = {c: b for b, c in bytes_to_unicode().items()}
    return bytes(to_byte[c] for c in tok.convert_ids_to_tokens(tid))


def first_token_bytes(tok, text):
    """How many bytes of text its first token covers: the token's own
    bytes, even where they end inside a character. Where the text does not
    start with them (the normalizer changed it), the original bytes of the
    characters the token reaches, from the tokenizer's character offsets."""
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    own = token_bytes(tok, enc["input_ids"][0])
    if text.encode("utf-8").startswith(own):
        return len(own)
    end = enc["offset_mapping"][0][1]
    return len(text[:end].encode("utf-8"))


class Scorer:
    """Log-probabilities of the tokens of one sequence. `chunk` bounds the
    logits held at once (positions x vocabulary), re-running the model for
    each chunk of positions rather than holding a 2,048 x vocabulary
    float64 matrix: the logits of every position are the model's own."""

    def __init__(self, model, chunk=512):
        self.model = model
        self.chunk = chunk

    @torch.no_grad()
    def token_logprobs(self, seq, first):
        """log p(seq[p] | seq[:p]) in nats for p in [first, len(seq))."""
        ids = torch.tensor([seq], dtype=torch.long)
        out = []
        for lo in range(first, len(seq), self.chunk):
            hi = min(lo + self.chunk, len(seq))
            # logits at positions lo-1 .. hi-2 predict tokens lo .. hi-1
            keep = torch.arange(lo - 1, hi - 1)
            logits = self.model(input_ids=ids[:, :hi], logits_to_keep=keep).logits[0]
            logp = torch.log_softmax(logits.double(), dim=-1)
            target = ids[0, lo:hi]
            out.extend(logp.gather(1, target[:, None])[:, 0].tolist())
        return out


def plan(n, window, stride):
    """Windows (begin, first scored, end) over n tokens; token 0 has no
    context, every other token is scored once."""
    spans, scored, begin = [], 1, 0
    while scored < n:
        end = min(begin + window, n)
        if end > scored:
            spans.append((begin, scored, end))
            scored = end
        begin += stride
    return spans


def fresh_doc(scorer, tok, text, window=2048, stride=1024, add_bos=True):
    """One document: {"bytes", "tokens", "bits", "windows"} as defined."""
    ids = encode(tok, text)
    nbytes = len(text.encode("utf-8"))
    bos = bos_of(tok) if add_bos else None
    if bos is not None:
        seq = [bos] + ids
    else:
        seq = ids
        if ids:
            nbytes -= first_token_bytes(tok, text)
    nats, tokens = 0.0, 0
    spans = plan(len(seq), window, stride)
    for begin, first, end in spans:
        lps = scorer.token_logprobs(seq[begin:end], first - begin)
        nats += sum(lps)
        tokens += len(lps)
    if tokens != max(len(seq) - 1, 0):
        raise AssertionError(f"scored {tokens} of {len(seq) - 1} tokens")
    return {"bytes": nbytes, "tokens": tokens, "bits": -nats / LN2, "windows": len(spans)}


def probe_item(scorer, tok, item, add_bos=True):
    """One item: {"logprobs", "tokens" (per choice), "pred", "tie"}."""
    bos = bos_of(tok) if add_bos else None
    prompt = ([bos] if bos is not None else []) + encode(tok, item["prompt"])
    lps, ntoks = [], []
    for choice in item["choices"]:
        cont = encode(tok, " " + choice)
        got = scorer.token_logprobs(prompt + cont, len(prompt))
        lps.append(sum(got))
        ntoks.append(len(cont))
    best, tie = 0, False
    for i in range(1, len(lps)):
        if lps[i] > lps[best]:
            best, tie = i, False
        elif lps[i] == lps[best]:
            tie = True
    return {"logprobs": lps, "tokens": ntoks, "pred": best, "tie": tie}


def load(model_dir, dtype=torch.float64, tokenizer_only=False):
    """The checkpoint's tokenizer and model, in dtype with eager attention."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    if tokenizer_only:
        return tok, None
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype, attn_implementation="eager")
    model.eval()
    return tok, model
