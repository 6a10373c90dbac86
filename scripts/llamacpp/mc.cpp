// llama-perplexity's --multiple-choice scoring, for run.sh, written from its
// published algorithm, on items already tokenized by udgam-ci (benchdata
// -probes), so that both programs score the same token ids. Each item's
// choices are sequences of their own that share the item's common start
// (the prompt, and any first tokens every choice has): those tokens are
// decoded once, tagged with every choice's sequence id. Items are packed
// into one batch while their tokens fit the context and their choices the
// sequence ids (at most -np, and 128 whatever -np says), the cache is
// cleared, and the batch is decoded in pieces of the
// batch size. Logits are asked only where a continuation token is
// predicted; their log-softmax is taken with all threads.
//
// Two differences from llama-perplexity, both so that the values can be
// checked against udgam-ci's per item: every continuation token is scored
// (llama-perplexity leaves out those all choices share) and a choice's
// score is the sum of its tokens' log-probabilities (llama-perplexity
// divides by the token count). The tokens decoded and the logits asked
// are those llama-perplexity's loop would decode and ask, plus one logit
// row for each continuation token all choices share (with the benchmark's
// byte-level vocabulary, the leading space: one row an item).
//
// The defaults are llama-perplexity's own: -c 512, batch min(2048, ctx),
// micro-batch 512, 4 sequences (-np 4), float16 cache, unified cache (it
// turns that on for --multiple-choice). Flash attention is off as in ppl.cpp
// (llama-perplexity's "auto" turns it on on a CPU; --fa on does that).
//
// usage: mc MODEL ITEMS [--ctx N] [--batch N] [--parallel N] [--kv f16|f32]
//           [--fa on|off] [--threads N] [--values PATH]
//
// ITEMS has one line per item, fields separated by tabs: id, the index of
// the right choice, the prompt's token ids (BOS first when used), then each
// choice's token ids, ids separated by spaces. Prints one line of key=value:
// items, choices, decodes, evaluated (tokens decoded), scored (continuation
// tokens), seconds (the scoring loop: packing, decoding, log-softmax; not
// loading the model or reading ITEMS), items_per_s, evaluated_per_s,
// scored_per_s, accuracy (percent, by the summed log-probability, first
// choice on ties) and logprob_sum (every choice's summed log-probability,
// added up). --values writes a line per item, tab-separated: id, the picked
// index, each choice's continuation tokens (comma-separated), then each
// choice's summed log-probability.
#include "llama.h"
#include "logprob.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

// llama-perplexity's cap on the sequence ids of one batch (32 items of 4
// choices), whatever -np allows.
static const int max_seq_ids = 128;

struct item {
    std::string                           id;
    int                                   answer = 0;
    size_t                                prompt = 0;  // prompt tokens, BOS included
    std::vector<std::vector<llama_token>> seqs;        // prompt + each choice
    size_t                                common = 0;  // tokens every seq starts with, decoded once
    size_t                                cells  = 0;  // tokens it adds to a batch
    size_t                                rows   = 0;  // logit rows it asks
    size_t                                row0   = 0;  // its first row in the batch
    std::vector<double>                   logprob;     // per choice, summed
};

// split cuts s at sep.
static std::vector<std::string> split(const std::string & s, char sep) {
    std::vector<std::string> out;
    size_t                   start = 0;
    for (;;) {
        const size_t end = s.find(sep, start);
        out.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
        if (end == std::string::npos) {
            return out;
        }
        start = end + 1;
    }
}

// parse_ids reads space-separated token ids below n_vocab; false on
// anything else or none.
static bool parse_ids(const std::string & field, int n_vocab, std::vector<llama_token> & out) {
    std::istringstream in(field);
    long               v;
    size_t             before = out.size();
    while (in >> v) {
        if (v < 0 || v >= n_vocab) {
            return false;
        }
        out.push_back(llama_token(v));
    }
    return in.eof() && out.size() > before;
}

// read_items reads ITEMS; on a bad line it prints the line number and
// returns false.
static bool read_items(const char * path, int n_vocab, std::vector<item> & items) {
    std::ifstream in(path);
    if (!in) {
        fprintf(stderr, "cannot read %s\n", path);
        return false;
    }
    std::string line;
    for (int n = 1; std::getline(in, line); n++) {
        const auto f = split(line, '\t');
        item       it;
        char *     end = nullptr;
        if (f.size() < 4) {
            fprintf(stderr, "%s line %d: %zu fields, want id, answer, prompt and at least one choice\n", path, n, f.size());
            return false;
        }
        it.id     = f[0];
        it.answer = int(strtol(f[1].c_str(), &end, 10));
        if (f[1].empty() || *end != 0 || it.answer < 0 || it.answer >= int(f.size() - 3)) {
            fprintf(stderr, "%s line %d (%s): answer %s is not a choice index below %zu\n", path, n, it.id.c_str(), f[1].c_str(), f.size() - 3);
            return false;
        }
        std::vector<llama_token> prompt;
        if (!parse_ids(f[2], n_vocab, prompt)) {
            fprintf(stderr, "%s line %d (%s): the prompt is not token ids below %d\n", path, n, it.id.c_str(), n_vocab);
            return false;
        }
        it.prompt = prompt.size();
        for (size_t c = 3; c < f.size(); c++) {
            std::vector<llama_token> seq = prompt;
            if (!parse_ids(f[c], n_vocab, seq)) {
                fprintf(stderr, "%s line %d (%s): choice %zu is not token ids below %d\n", path, n, it.id.c_str(), c - 3, n_vocab);
                return false;
            }
            it.seqs.push_back(std::move(seq));
        }
        // The common start, kept short of every seq's end so that each
        // choice has a token of its own to tag with its sequence id.
        size_t min_len = it.seqs[0].size();
        for (const auto & s : it.seqs) {
            min_len = std::min(min_len, s.size());
        }
        it.common = it.prompt;
        while (it.common + 1 < min_len) {
            bool same = true;
            for (const auto & s : it.seqs) {
                same = same && s[it.common] == it.seqs[0][it.common];
            }
            if (!same) {
                break;
            }
            it.common++;
        }
        // Rows: from the prompt's last token through the common start, then
        // each seq's own tokens but its last.
        it.cells = it.common;
        it.rows  = it.common - it.prompt + 1;
        for (const auto & s : it.seqs) {
            it.cells += s.size() - it.common;
            it.rows += s.size() - it.common - 1;
        }
        items.push_back(std::move(it));
    }
    if (items.empty()) {
        fprintf(stderr, "%s: no items\n", path);
        return false;
    }
    return true;
}

// row_for is the batch row whose logits predict it's seq s at position j
// (it.prompt <= j < it.seqs[s].size()).
static size_t row_for(const item & it, size_t s, size_t j) {
    if (j - 1 < it.common) {
        return it.row0 + (j - 1) - (it.prompt - 1);
    }
    size_t r = it.row0 + it.common - it.prompt + 1;
    for (size_t t = 0; t < s; t++) {
        r += it.seqs[t].size() - it.common - 1;
    }
    return r + (j - 1 - it.common);
}

int main(int argc, char ** argv) {
    const char * model_path  = nullptr;
    const char * items_path  = nullptr;
    const char * values_path = nullptr;
    int          n_ctx       = 512;
    int          n_batch     = 2048;
    int          parallel    = 4;
    bool         kv_f32      = false;
    bool         fa          = false;
    int          threads     = 2;
    bool         bad         = false;
    for (int i = 1; i < argc; i++) {
        const bool has_next = i + 1 < argc;
        if (!strcmp(argv[i], "--ctx") && has_next) {
            n_ctx = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--batch") && has_next) {
            n_batch = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--parallel") && has_next) {
            parallel = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--kv") && has_next) {
            const char * v = argv[++i];
            kv_f32         = !strcmp(v, "f32");
            bad            = bad || (!kv_f32 && strcmp(v, "f16"));
        } else if (!strcmp(argv[i], "--fa") && has_next) {
            const char * v = argv[++i];
            fa             = !strcmp(v, "on");
            bad            = bad || (!fa && strcmp(v, "off"));
        } else if (!strcmp(argv[i], "--threads") && has_next) {
            threads = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--values") && has_next) {
            values_path = argv[++i];
        } else if (!model_path) {
            model_path = argv[i];
        } else if (!items_path) {
            items_path = argv[i];
        } else {
            bad = true;
        }
    }
    if (bad || !model_path || !items_path || n_ctx < 4 || n_batch < 1 || parallel < 1 || parallel > 256 || threads < 1) {
        fprintf(stderr,
                "usage: %s MODEL ITEMS [--ctx N] [--batch N] [--parallel N (1-256)] [--kv f16|f32] [--fa on|off] [--threads N] [--values PATH]\n",
                argv[0]);
        return 2;
    }
    n_batch           = std::min(n_batch, n_ctx);  // as llama-perplexity lowers it
    const int max_seq = std::min(parallel, max_seq_ids);

    llama_log_set([](ggml_log_level, const char *, void *) {}, nullptr);
    llama_backend_init();
    llama_model * model = llama_model_load_from_file(model_path, llama_model_default_params());
    if (!model) {
        fprintf(stderr, "cannot load %s\n", model_path);
        return 1;
    }
    const llama_vocab * vocab   = llama_model_get_vocab(model);
    const int           n_vocab = llama_vocab_n_tokens(vocab);
    std::vector<item>   items;
    if (!read_items(items_path, n_vocab, items)) {
        return 1;
    }
    for (const auto & it : items) {
        if (int(it.cells) > n_ctx || int(it.seqs.size()) > max_seq) {
            fprintf(stderr, "%s: item %s needs %zu cells and %zu sequences; the context has %d and %d\n", items_path,
                    it.id.c_str(), it.cells, it.seqs.size(), n_ctx, max_seq);
            return 1;
        }
    }

    auto cp            = llama_context_default_params();
    cp.n_ctx           = n_ctx;
    cp.n_batch         = n_batch;
    cp.n_ubatch        = std::min(n_batch, 512);
    cp.n_seq_max       = parallel;
    cp.kv_unified      = true;  // one set of cells tagged with several sequence ids
    cp.type_k          = kv_f32 ? GGML_TYPE_F32 : GGML_TYPE_F16;
    cp.type_v          = cp.type_k;
    cp.n_threads       = threads;
    cp.n_threads_batch = threads;
    cp.flash_attn_type = fa ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.no_perf         = true;
    llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "cannot make a context for %s\n", model_path);
        return 1;
    }

    llama_batch         batch = llama_batch_init(n_ctx, 0, max_seq);
    std::vector<float>  logits;
    std::vector<double> lse;
    long                evaluated = 0, scored = 0;
    int                 decodes = 0, correct = 0, choices = 0;
    double              checksum = 0;
    const auto          t0       = std::chrono::steady_clock::now();
    for (size_t i0 = 0; i0 < items.size();) {
        // Pack items [i0, i1) into one batch.
        size_t i1 = i0, cells = 0, rows = 0;
        int    s0 = 0;
        batch.n_tokens = 0;
        auto add       = [&](llama_token tok, size_t pos, int seq, int n_seq, bool out) {
            const int k       = batch.n_tokens++;
            batch.token[k]    = tok;
            batch.pos[k]      = llama_pos(pos);
            batch.n_seq_id[k] = n_seq;
            for (int s = 0; s < n_seq; s++) {
                batch.seq_id[k][s] = seq + s;
            }
            batch.logits[k] = out;
        };
        while (i1 < items.size() && cells + items[i1].cells <= size_t(n_ctx) &&
               s0 + int(items[i1].seqs.size()) <= max_seq) {
            item &    it = items[i1];
            const int n  = int(it.seqs.size());
            for (size_t j = 0; j < it.common; j++) {
                add(it.seqs[0][j], j, s0, n, j + 1 >= it.prompt);
            }
            for (int s = 0; s < n; s++) {
                const auto & seq = it.seqs[s];
                for (size_t j = it.common; j < seq.size(); j++) {
                    add(seq[j], j, s0 + s, 1, j + 1 < seq.size());
                }
            }
            it.row0 = rows;
            rows += it.rows;
            cells += it.cells;
            s0 += n;
            i1++;
        }
        llama_memory_clear(llama_get_memory(ctx), true);
        logits.resize(rows * size_t(n_vocab));
        size_t got = 0;
        for (int b0 = 0; b0 < batch.n_tokens; b0 += n_batch) {
            const int   n    = std::min(n_batch, batch.n_tokens - b0);
            llama_batch view = batch;
            view.n_tokens    = n;
            view.token += b0;
            view.pos += b0;
            view.n_seq_id += b0;
            view.seq_id += b0;
            view.logits += b0;
            if (llama_decode(ctx, view) != 0) {
                fprintf(stderr, "decode failed at items %s to %s\n", items[i0].id.c_str(), items[i1 - 1].id.c_str());
                return 1;
            }
            size_t out = 0;
            for (int k = 0; k < n; k++) {
                out += view.logits[k] != 0;
            }
            const float * l = llama_get_logits(ctx);
            std::copy(l, l + out * n_vocab, logits.begin() + got * n_vocab);
            got += out;
            decodes++;
        }
        evaluated += batch.n_tokens;

        // The log-softmax's normaliser of every row, rows shared out among
        // the threads.
        lse.assign(rows, 0.0);
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; t++) {
            pool.emplace_back([&, t] {
                for (size_t r = t; r < rows; r += threads) {
                    lse[r] = log_sum_exp(logits.data() + r * n_vocab, n_vocab);
                }
            });
        }
        for (auto & th : pool) {
            th.join();
        }
        for (size_t i = i0; i < i1; i++) {
            item & it = items[i];
            it.logprob.assign(it.seqs.size(), 0.0);
            for (size_t s = 0; s < it.seqs.size(); s++) {
                const auto & seq = it.seqs[s];
                for (size_t j = it.prompt; j < seq.size(); j++) {
                    const size_t r = row_for(it, s, j);
                    it.logprob[s] += double(logits[r * n_vocab + seq[j]]) - lse[r];
                }
                scored += seq.size() - it.prompt;
                checksum += it.logprob[s];
            }
            const size_t pick = std::max_element(it.logprob.begin(), it.logprob.end()) - it.logprob.begin();
            correct += int(pick) == it.answer;
            choices += int(it.seqs.size());
        }
        i0 = i1;
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    printf("items=%zu choices=%d decodes=%d evaluated=%ld scored=%ld seconds=%.2f items_per_s=%.2f evaluated_per_s=%.1f "
           "scored_per_s=%.1f accuracy=%.2f logprob_sum=%.6f\n",
           items.size(), choices, decodes, evaluated, scored, s, items.size() / s, evaluated / s, scored / s,
           100.0 * correct / items.size(), checksum);

    if (values_path) {
        FILE * f = fopen(values_path, "w");
        if (!f) {
            fprintf(stderr, "cannot write %s\n", values_path);
            return 1;
        }
        for (const auto & it : items) {
            const size_t pick = std::max_element(it.logprob.begin(), it.logprob.end()) - it.logprob.begin();
            fprintf(f, "%s\t%zu\t", it.id.c_str(), pick);
            for (size_t c = 0; c < it.seqs.size(); c++) {
                fprintf(f, c ? ",%zu" : "%zu", it.seqs[c].size() - it.prompt);
            }
            for (double lp : it.logprob) {
                fprintf(f, "\t%.17g", lp);
            }
            fprintf(f, "\n");
        }
        if (fclose(f) != 0) {
            fprintf(stderr, "cannot write %s\n", values_path);
            return 1;
        }
    }
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
