// llama-bench's prompt test (-p N -n 0), for run.sh: the same llama.h calls in
// the same order (a ggml thread pool polling 50, random tokens, one warm-up
// run, the cache cleared before each timed run), plus the variants udgam-ci
// scores with: a float32 KV cache and a logit at every position.
//
// usage: bench MODEL [--kv f16|f32] [--batch N] [--ubatch N] [--prompt N]
//                    [--all-logits] [--threads N] [--reps N]
// Prints one line: the mean tokens/s of the timed runs.
#include "ggml-cpu.h"
#include "llama.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

struct options {
    const char * model      = nullptr;
    bool         kv_f32     = false;
    int          batch      = 2048;
    int          ubatch     = 512;
    int          prompt     = 2048;
    bool         all_logits = false;
    int          threads    = 2;
    int          reps       = 5;
};

static bool parse(int argc, char ** argv, options & o) {
    for (int i = 1; i < argc; i++) {
        const char * a    = argv[i];
        const char * next = i + 1 < argc ? argv[i + 1] : nullptr;
        if (!strcmp(a, "--all-logits")) {
            o.all_logits = true;
        } else if (!strcmp(a, "--kv") && next) {
            o.kv_f32 = !strcmp(argv[++i], "f32");
        } else if (!strcmp(a, "--batch") && next) {
            o.batch = atoi(argv[++i]);
        } else if (!strcmp(a, "--ubatch") && next) {
            o.ubatch = atoi(argv[++i]);
        } else if (!strcmp(a, "--prompt") && next) {
            o.prompt = atoi(argv[++i]);
        } else if (!strcmp(a, "--threads") && next) {
            o.threads = atoi(argv[++i]);
        } else if (!strcmp(a, "--reps") && next) {
            o.reps = atoi(argv[++i]);
        } else if (a[0] != '-' && !o.model) {
            o.model = a;
        } else {
            return false;
        }
    }
    return o.model && o.batch > 0 && o.ubatch > 0 && o.prompt > 0 && o.threads > 0 && o.reps > 0;
}

static bool run_prompt(llama_context * ctx, const options & o, int n_vocab) {
    llama_set_n_threads(ctx, o.threads, o.threads);
    std::vector<llama_token> tokens(o.batch);
    std::vector<int8_t>      outputs(o.batch, 1);
    for (int done = 0; done < o.prompt;) {
        const int n = std::min(o.prompt - done, o.batch);
        for (int i = 0; i < n; i++) {
            tokens[i] = std::rand() % n_vocab;
        }
        llama_batch b = llama_batch_get_one(tokens.data(), n);
        if (o.all_logits) {
            b.logits = outputs.data();  // else llama.cpp returns the last logit only
        }
        if (llama_decode(ctx, b) != 0) {
            return false;
        }
        done += n;
    }
    llama_synchronize(ctx);
    return true;
}

int main(int argc, char ** argv) {
    options o;
    if (!parse(argc, argv, o)) {
        fprintf(stderr, "usage: %s MODEL [--kv f16|f32] [--batch N] [--ubatch N] [--prompt N] [--all-logits] [--threads N] [--reps N]\n", argv[0]);
        return 2;
    }
    llama_log_set([](ggml_log_level, const char *, void *) {}, nullptr);
    llama_backend_init();
    llama_model * model = llama_model_load_from_file(o.model, llama_model_default_params());
    if (!model) {
        fprintf(stderr, "cannot load %s\n", o.model);
        return 1;
    }
    auto cp            = llama_context_default_params();
    cp.n_ctx           = o.prompt;
    cp.n_batch         = o.batch;
    cp.n_ubatch        = o.ubatch;
    cp.type_k          = o.kv_f32 ? GGML_TYPE_F32 : GGML_TYPE_F16;
    cp.type_v          = cp.type_k;
    cp.n_threads       = o.threads;
    cp.n_threads_batch = o.threads;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.no_perf         = true;
    llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "cannot make a context for %s\n", o.model);
        return 1;
    }

    auto tpp       = ggml_threadpool_params_default(o.threads);
    tpp.poll       = 50;
    tpp.strict_cpu = false;
    ggml_threadpool * pool = ggml_threadpool_new(&tpp);
    llama_attach_threadpool(ctx, pool, nullptr);

    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    if (!run_prompt(ctx, o, n_vocab)) {  // warm-up
        fprintf(stderr, "decode failed\n");
        return 1;
    }
    double sum = 0;
    for (int r = 0; r < o.reps; r++) {
        llama_memory_clear(llama_get_memory(ctx), false);
        const auto t0 = std::chrono::steady_clock::now();
        if (!run_prompt(ctx, o, n_vocab)) {
            fprintf(stderr, "decode failed\n");
            return 1;
        }
        sum += o.prompt / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    printf("%.1f\n", sum / o.reps);

    llama_free(ctx);
    ggml_threadpool_free(pool);
    llama_model_free(model);
    return 0;
}
