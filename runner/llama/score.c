//go:build cgo

#include <math.h>
#include "score.h"
#if defined(__GLIBC__)
#include <malloc.h>
#endif

static bool udgam_abort(void *data) { return *(volatile int *)data != 0; }

void udgam_set_abort(struct llama_context *ctx, int *flag) {
	llama_set_abort_callback(ctx, udgam_abort, flag);
}

double udgam_logsumexp(const float *row, int n) {
	float mx = row[0];
	int bad = 0;
	for (int i = 0; i < n; i++) {
		float x = row[i];
		bad |= !isfinite(x);
		mx = x > mx ? x : mx;
	}
	if (bad) {
		return NAN;
	}
	double s = 0;
	for (int i = 0; i < n; i++) {
		s += (double)expf(row[i] - mx);
	}
	return (double)mx + log(s);
}

float udgam_row_max(const float *x, int n, int *bad) {
	float mx = x[0];
	int b = 0;
	for (int i = 0; i < n; i++) {
		b |= !isfinite(x[i]);
		mx = x[i] > mx ? x[i] : mx;
	}
	*bad |= b;
	return mx;
}

double udgam_sum_exp(const float *x, int n, float max) {
	double s = 0;
	for (int i = 0; i < n; i++) {
		s += (double)expf(x[i] - max);
	}
	return s;
}

void udgam_batch_set(struct llama_batch *b, int i, llama_token tok, llama_pos pos,
                     const llama_seq_id *seqs, int nseq, int8_t logits) {
	b->token[i] = tok;
	b->pos[i] = pos;
	b->n_seq_id[i] = nseq;
	for (int s = 0; s < nseq; s++) {
		b->seq_id[i][s] = seqs[s];
	}
	b->logits[i] = logits;
}

int udgam_pair(const float *a, const float *b, int n, double *lse_a, double *lse_b,
               double *kl, int *top_a, int *top_b) {
	float ma = a[0], mb = b[0];
	int ta = 0, tb = 0;
	for (int i = 0; i < n; i++) {
		if (!isfinite(a[i]) || !isfinite(b[i])) {
			return -1;
		}
		if (a[i] > ma) { ma = a[i]; ta = i; }
		if (b[i] > mb) { mb = b[i]; tb = i; }
	}
	// KL = sum p_i ((a_i - la) - (b_i - lb)) = sum e_i (a_i - b_i) / sa - la + lb
	// with e_i = exp(a_i - ma): one pass, two exponentials per token.
	double sa = 0, sb = 0, sab = 0;
	for (int i = 0; i < n; i++) {
		double e = exp((double)a[i] - ma);
		sa += e;
		sab += e * ((double)a[i] - (double)b[i]);
		sb += exp((double)b[i] - mb);
	}
	double la = ma + log(sa), lb = mb + log(sb);
	double k = sab / sa - la + lb;
	*lse_a = la;
	*lse_b = lb;
	*kl = k;
	*top_a = ta;
	*top_b = tb;
	return 0;
}

long long udgam_logits_bytes(struct llama_context *ctx) {
#if defined(__GLIBC__)
	float *logits = llama_get_logits(ctx);
	return logits == NULL ? 0 : (long long)malloc_usable_size(logits);
#else
	(void)ctx;
	return -1;
#endif
}
