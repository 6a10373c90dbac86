// Prints transformers.js token ids (no special tokens added) for a JSON list
// of texts read from stdin, as one JSON list of id lists on stdout.
//
// usage: node encode.js HFREF_INSTALL_DIR TOKENIZER_DIR < texts.json
"use strict";
const fs = require("fs");
const path = require("path");
const { createRequire } = require("module");

const [installDir, dir] = process.argv.slice(2);
if (!installDir || !dir) {
  console.error("usage: node encode.js HFREF_INSTALL_DIR TOKENIZER_DIR < texts.json");
  process.exit(2);
}
const req = createRequire(path.join(installDir, "package.json"));
const { TokenizerLoader } = req("@lenml/tokenizers");

function readJSON(name) {
  const p = path.join(dir, name);
  try {
    return JSON.parse(fs.readFileSync(p, "utf8"));
  } catch (e) {
    console.error(`read ${p}: ${e.message}`);
    process.exit(1);
  }
}

const tok = TokenizerLoader.fromPreTrained({
  tokenizerJSON: readJSON("tokenizer.json"),
  tokenizerConfig: readJSON("tokenizer_config.json"),
});
const texts = JSON.parse(fs.readFileSync(0, "utf8"));
if (!Array.isArray(texts) || texts.some((t) => typeof t !== "string")) {
  console.error("stdin: want a JSON list of strings");
  process.exit(1);
}
const ids = texts.map((t) => tok.encode(t, { add_special_tokens: false }));
process.stdout.write(JSON.stringify(ids));
