// Shared by run.sh's llama.cpp tools: the log-softmax both take, in double
// precision, so that their sums compare with udgam-ci's to 1e-4 nats.
#pragma once

#include <algorithm>
#include <cmath>

// log_sum_exp returns log(sum exp(logits)) over one row of n_vocab logits;
// a token's log-probability is its logit minus this.
static inline double log_sum_exp(const float * logits, int n_vocab) {
    const float mx  = *std::max_element(logits, logits + n_vocab);
    double      sum = 0;
    for (int v = 0; v < n_vocab; v++) {
        sum += std::exp(double(logits[v] - mx));
    }
    return double(mx) + std::log(sum);
}
