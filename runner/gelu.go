package runner

import "math"

// GELUTanh is GELU's tanh approximation: transformers' gelu_new,
// gelu_fast and gelu_pytorch_tanh, and what ggml's GELU computes.
func GELUTanh(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}

// GELUErf is the exact GELU, x * Phi(x): transformers' "gelu", and ggml's
// GELU_ERF.
func GELUErf(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }
