//go:build cgo

#include <math.h>
#include "head.h"
#include "score.h"

void udgam_head_mode(bool on) { udgam_set_head_ok(on ? udgam_head_supported : NULL); }

void udgam_panel_lse(const float *p, int rows, int width, int ld, float *mx, double *sum) {
	for (int j = 0; j < rows; j++) {
		const float *x = p + (size_t)j * ld;
		int bad = 0;
		mx[j] = udgam_row_max(x, width, &bad);
		sum[j] = bad ? NAN : udgam_sum_exp(x, width, mx[j]);
	}
}
