// The C half of scoring (llama.go, pair.go): what runs once per logit row
// or per batch token, where a call from Go per value would cost more than
// the work.
#ifndef UDGAM_SCORE_H
#define UDGAM_SCORE_H

#include <stdbool.h>
#include <stdint.h>
#include "llama.h"

// udgam_set_abort makes llama.cpp stop ctx's graph between nodes once *flag
// is not 0 (it polls the flag on the CPU).
void udgam_set_abort(struct llama_context *ctx, int *flag);

// udgam_logsumexp returns log(sum(exp(row))) with float64 accumulation after
// subtracting the maximum, so logits of any size are safe. It returns NAN if
// any logit is not finite. It is udgam_row_max and udgam_sum_exp over the
// whole row.
double udgam_logsumexp(const float *row, int n);

// udgam_row_max returns the largest of x[0..n-1] (n >= 1) and sets *bad to
// 1 if any of them is not finite, leaving it alone otherwise, so a caller
// can run it over a row's panels with one flag. The maximum is meaningless
// when *bad is set.
float udgam_row_max(const float *x, int n, int *bad);

// udgam_sum_exp returns the sum of exp(x[i] - max) over i < n (n >= 0), each
// exponential taken in float from the float difference and summed in double.
// The order of the additions depends only on n, never on the caller's
// alignment, threads or the build's vector width. x[i] <= max for all i and
// finite inputs are assumed (udgam_row_max checks them).
double udgam_sum_exp(const float *x, int n, float max);

// udgam_batch_set fills token i of b: the token at pos in the nseq
// sequences seqs, with its logits kept when logits is not 0.
void udgam_batch_set(struct llama_batch *b, int i, llama_token tok, llama_pos pos,
                     const llama_seq_id *seqs, int nseq, int8_t logits);

// udgam_pair compares two rows of n logits: each row's log-sum-exp, the
// KL divergence of the second's softmax from the first's, and each row's
// argmax (the lowest index wins a tie), all accumulated in double. It
// returns -1 if any logit is not finite, else 0.
int udgam_pair(const float *a, const float *b, int n, double *lse_a, double *lse_b,
               double *kl, int *top_a, int *top_b);

// udgam_logits_bytes is the size of the buffer ctx holds its logits in,
// as the C library allocated it (tests only: it assumes a CPU buffer,
// from malloc), or -1 where the C library does not say (not glibc).
long long udgam_logits_bytes(struct llama_context *ctx);

#endif
