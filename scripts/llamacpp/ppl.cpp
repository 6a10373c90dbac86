// llama-perplexity's default measurement (-c N, no stride), for run.sh,
// written from its published algorithm: the text is tokenized whole (BOS
// first when the vocabulary adds one), cut into chunks of N tokens, each
// chunk decoded from an empty cache with its first token replaced by BOS,
// logits asked for the second half only, and the log-probability of every
// second-half token but the last taken there with all threads.
//
// usage: ppl MODEL TEXT [--ctx N] [--kv f16|f32] [--threads N]
// Prints one line of key=value: tokens, chunks, evaluated, scored, seconds,
// decoded_per_s, scored_per_s, ppl.
#include "llama.h"
#include "logprob.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

// nll_of returns -log p(token) from one row of logits, in double precision.
static double nll_of(const float * logits, int n_vocab, llama_token token) {
    return log_sum_exp(logits, n_vocab) - double(logits[token]);
}

int main(int argc, char ** argv) {
    const char * model_path = nullptr;
    const char * text_path  = nullptr;
    int          n_ctx      = 2048;
    bool         kv_f32     = false;
    int          threads    = 2;
    for (int i = 1; i < argc; i++) {
        const bool has_next = i + 1 < argc;
        if (!strcmp(argv[i], "--ctx") && has_next) {
            n_ctx = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--kv") && has_next) {
            kv_f32 = !strcmp(argv[++i], "f32");
        } else if (!strcmp(argv[i], "--threads") && has_next) {
            threads = atoi(argv[++i]);
        } else if (!model_path) {
            model_path = argv[i];
        } else if (!text_path) {
            text_path = argv[i];
        } else {
            model_path = nullptr;
            break;
        }
    }
    if (!model_path || !text_path || n_ctx < 4 || threads < 1) {
        fprintf(stderr, "usage: %s MODEL TEXT [--ctx N] [--kv f16|f32] [--threads N]\n", argv[0]);
        return 2;
    }
    std::ifstream in(text_path);
    if (!in) {
        fprintf(stderr, "cannot read %s\n", text_path);
        return 1;
    }
    std::stringstream buf;
    buf << in.rdbuf();
    const std::string text = buf.str();

    llama_log_set([](ggml_log_level, const char *, void *) {}, nullptr);
    llama_backend_init();
    llama_model * model = llama_model_load_from_file(model_path, llama_model_default_params());
    if (!model) {
        fprintf(stderr, "cannot load %s\n", model_path);
        return 1;
    }
    const int n_batch  = std::min(n_ctx, 2048);  // llama-perplexity's default batch
    auto      cp       = llama_context_default_params();
    cp.n_ctx           = n_ctx;
    cp.n_batch         = n_batch;
    cp.n_ubatch        = 512;
    cp.type_k          = kv_f32 ? GGML_TYPE_F32 : GGML_TYPE_F16;
    cp.type_v          = cp.type_k;
    cp.n_threads       = threads;
    cp.n_threads_batch = threads;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.no_perf         = true;
    llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "cannot make a context for %s\n", model_path);
        return 1;
    }
    const llama_vocab * vocab   = llama_model_get_vocab(model);
    const int           n_vocab = llama_vocab_n_tokens(vocab);
    const bool          add_bos = llama_vocab_get_add_bos(vocab);

    std::vector<llama_token> tokens(text.size() + 2);
    const int n_tokens = llama_tokenize(vocab, text.data(), text.size(), tokens.data(), tokens.size(), true, false);
    if (n_tokens < 2 * n_ctx) {
        fprintf(stderr, "%s: %d tokens, need at least %d\n", text_path, n_tokens, 2 * n_ctx);
        return 1;
    }
    tokens.resize(n_tokens);

    const int   n_chunk = n_tokens / n_ctx;
    const int   first   = n_ctx / 2;
    llama_batch batch   = llama_batch_init(n_batch, 0, 1);
    std::vector<float> logits;
    double      nll    = 0;
    long        scored = 0;
    const auto  t0     = std::chrono::steady_clock::now();
    for (int c = 0; c < n_chunk; c++) {
        const int start = c * n_ctx;
        llama_memory_clear(llama_get_memory(ctx), true);
        logits.clear();
        for (int b0 = 0; b0 < n_ctx; b0 += n_batch) {
            const int n   = std::min(n_ctx - b0, n_batch);
            int       out = 0;
            batch.n_tokens = n;
            for (int k = 0; k < n; k++) {
                const int pos       = b0 + k;
                batch.token[k]      = pos == 0 && add_bos ? llama_vocab_bos(vocab) : tokens[start + pos];
                batch.pos[k]        = pos;
                batch.n_seq_id[k]   = 1;
                batch.seq_id[k][0]  = 0;
                batch.logits[k]     = pos >= first;
                out                += pos >= first;
            }
            if (llama_decode(ctx, batch) != 0) {
                fprintf(stderr, "decode failed in chunk %d\n", c);
                return 1;
            }
            const float * l = llama_get_logits(ctx);
            logits.insert(logits.end(), l, l + size_t(out) * n_vocab);
        }
        const int            n_score = n_ctx - 1 - first;
        std::vector<double>  part(threads, 0.0);
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; t++) {
            pool.emplace_back([&, t] {
                for (int j = t; j < n_score; j += threads) {
                    part[t] += nll_of(logits.data() + size_t(j) * n_vocab, n_vocab, tokens[start + first + j + 1]);
                }
            });
        }
        for (auto & th : pool) {
            th.join();
        }
        for (double p : part) {
            nll += p;
        }
        scored += n_score;
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    printf("tokens=%d chunks=%d evaluated=%d scored=%ld seconds=%.2f decoded_per_s=%.1f scored_per_s=%.1f ppl=%.4f\n",
           n_tokens, n_chunk, n_chunk * n_ctx, scored, s, n_chunk * n_ctx / s, scored / s, std::exp(nll / scored));
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
