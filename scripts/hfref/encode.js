// Prints transformers.js token ids (no special tokens added) for a JSON list
// of texts read from stdin: one JSON list (one entry a tokenizer directory)
// of id lists (one a text) on stdout.
//
// usage: node encode.js HFREF_INSTALL_DIR TOKENIZER_DIR... < texts.json
"use strict";
const fs = require("fs");
const path = require("path");
const { createRequire } = require("module");

const [installDir, ...dirs] = process.argv.slice(2);
if (!installDir || dirs.length === 0) {
  console.error("usage: node encode.js HFREF_INSTALL_DIR TOKENIZER_DIR... < texts.json");
  process.exit(2);
}
const req = createRequire(path.join(installDir, "package.json"));
const { TokenizerLoader } = req("@lenml/tokenizers");

function readJSON(dir, name) {
  const p = path.join(dir, name);
  try {
    return JSON.parse(fs.readFileSync(p, "utf8"));
  } catch (e) {
    console.error(`read ${p}: ${e.message}`);
    process.exit(1);
  }
}

const texts = JSON.parse(fs.readFileSync(0, "utf8"));
if (!Array.isArray(texts) || texts.some((t) => typeof t !== "string")) {
  console.error("stdin: want a JSON list of strings");
  process.exit(1);
}
const out = dirs.map((dir) => {
  const tok = TokenizerLoader.fromPreTrained({
    tokenizerJSON: readJSON(dir, "tokenizer.json"),
    tokenizerConfig: readJSON(dir, "tokenizer_config.json"),
  });
  return texts.map((t) => tok.encode(t, { add_special_tokens: false }));
});
process.stdout.write(JSON.stringify(out));
