package ggufspec

// ChatTemplateKey is the GGUF key of the tokenizer's chat template
// (llama.cpp's name): convert/tokenizer writes it, runner reads its hash.
const ChatTemplateKey = "tokenizer.chat_template"
