"""Is Hugging Face tokenizers the reference scorer's tokenizer? (issue 26)

For each checkpoint directory given, encodes the texts on stdin (a JSON
list) twice: with tokenizers.Tokenizer.from_file(DIR/tokenizer.json), the
reference `udgam-ci model check-tokenizer --reference python` runs, and with
transformers.AutoTokenizer.from_pretrained(DIR), what the reference scorer
calls, both without added special tokens. Prints one JSON object per
directory: the versions, how many texts agree, and the first that does not.
Exits 1 when any text differs. Run by TestTokenizersReference
(cmd/udgam-ci) under `make crosscheck-tokenizers`, with the pinned
environment of scripts/pyref/install.sh.
"""
import json
import sys

import tokenizers
import transformers


def main():
    texts = json.load(sys.stdin)
    failed = False
    for d in sys.argv[1:]:
        raw = tokenizers.Tokenizer.from_file(d + "/tokenizer.json")
        want = [e.ids for e in raw.encode_batch(texts, add_special_tokens=False)]
        auto = transformers.AutoTokenizer.from_pretrained(d)
        got = [auto(t, add_special_tokens=False)["input_ids"] for t in texts]
        differ = [i for i in range(len(texts)) if got[i] != want[i]]
        out = {
            "dir": d,
            "tokenizers": tokenizers.__version__,
            "transformers": transformers.__version__,
            "class": type(auto).__name__,
            "texts": len(texts),
            "equal": len(texts) - len(differ),
        }
        if differ:
            i = differ[0]
            out["first"] = {"text": i, "snippet": texts[i][:60], "auto": got[i][:20], "tokenizers": want[i][:20]}
            failed = True
        print(json.dumps(out))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
