# Encodes texts with Hugging Face tokenizers (the Rust library, through its
# Python binding), the reference `udgam-ci model check-tokenizer --reference
# python` compares with. Embedded in the binary and run as `python -c`:
# argv[1] is a tokenizer.json, stdin a JSON list of texts; stdout is
# {"version": ..., "ids": [[...], ...]}, each text encoded without added
# special tokens (special-token literals in the text are still matched), as
# the reference scorer's tokenizer(text, add_special_tokens=False) does.
import json
import sys

try:
    import tokenizers
except ImportError as e:
    sys.stderr.write("cannot import tokenizers (%s): pip install tokenizers\n" % e)
    sys.exit(3)

tok = tokenizers.Tokenizer.from_file(sys.argv[1])
texts = json.load(sys.stdin)
ids = [enc.ids for enc in tok.encode_batch(texts, add_special_tokens=False)]
json.dump({"version": tokenizers.__version__, "ids": ids}, sys.stdout)
