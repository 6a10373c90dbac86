package llama

// #include "kernels.h"
import "C"

import (
	"fmt"
	"math"
	"sync"
	"unsafe"
)

// attnShape is one flash attention as llama.cpp's graph hands it to ggml:
// seqs streams of nq query tokens of heads heads, over nkv cache cells of
// kvh key and value heads (grouped-query attention when kvh < heads).
type attnShape struct {
	seqs, nq, nkv, heads, kvh, dk, dv int
	kF16, vF16                        bool    // keys, values stored as float16 (the values given are rounded)
	softcap                           float32 // attention logit soft-capping, 0 for none
}

// flashAttn evaluates ggml's CPU flash attention in this binary on
// threads threads: q is seqs x nq x heads x dk, k seqs x nkv x kvh x dk,
// v the same with dv, mask nq x nkv (nil for none, rounded to float16,
// shared by the streams); the output is seqs x nq x heads x dv.
func flashAttn(s attnShape, q, k, v, mask []float32, scale float32, threads int) ([]float32, error) {
	if len(q) != s.seqs*s.nq*s.heads*s.dk || len(k) != s.seqs*s.nkv*s.kvh*s.dk || len(v) != s.seqs*s.nkv*s.kvh*s.dv ||
		(mask != nil && len(mask) != s.nq*s.nkv) || s.heads%s.kvh != 0 {
		return nil, fmt.Errorf("flashAttn %+v: %d, %d, %d and %d values do not fit", s, len(q), len(k), len(v), len(mask))
	}
	out := make([]float32, s.seqs*s.nq*s.heads*s.dv)
	var mp *C.float
	if mask != nil {
		mp = (*C.float)(unsafe.Pointer(&mask[0]))
	}
	if C.udgam_ggml_flash_attn((*C.float)(unsafe.Pointer(&q[0])), (*C.float)(unsafe.Pointer(&k[0])), (*C.float)(unsafe.Pointer(&v[0])), mp,
		C.int(s.seqs), C.int(s.nq), C.int(s.nkv), C.int(s.heads), C.int(s.kvh), C.int(s.dk), C.int(s.dv),
		C.bool(s.kF16), C.bool(s.vF16), C.float(scale), C.float(s.softcap), C.int(threads), (*C.float)(unsafe.Pointer(&out[0]))) != 0 {
		return nil, fmt.Errorf("ggml could not evaluate flash attention %+v", s)
	}
	return out, nil
}

// TiledAttention reports whether this binary's flash attention is
// scripts/engine/attn.c (nil): float32 throughout, and faster on CPUs than
// ggml's attention without flash attention. Otherwise (an error that says
// why) it is ggml's own, which keeps its output in float16 when the
// values are float16 and is slower than the unfused path: Load then
// leaves flash attention off unless asked. The probe tells them apart by
// that float16 sum: 256 float16 values in [0.5, 1] summed in float16 miss
// by about 1e-3 of the mean; in float32 by about 1e-7.
var TiledAttention = sync.OnceValue(probeAttention)

func probeAttention() error {
	s := attnShape{seqs: 1, nq: 1, nkv: 256, heads: 1, kvh: 1, dk: 16, dv: 16, vF16: true}
	q, k, v := make([]float32, s.dk), make([]float32, s.nkv*s.dk), make([]float32, s.nkv*s.dv)
	for i := range v {
		// Exact in float16, so the float64 mean below is exact too.
		v[i] = 0.5 + float32(i%257)/512
	}
	out, err := flashAttn(s, q, k, v, nil, 1, 1)
	if err != nil {
		return err
	}
	// Scores are all 0: the output is each dimension's mean value.
	for d := range s.dv {
		var mean float64
		for j := range s.nkv {
			mean += float64(v[j*s.dv+d])
		}
		mean /= float64(s.nkv)
		if e := math.Abs(float64(out[d]) - mean); e > 1e-5*mean {
			return fmt.Errorf("ggml's flash attention misses a float16 mean by %.2g: not the tiled kernel of scripts/engine/attn.c (build with make, on x86 with AVX2, FMA and F16C)", e/mean)
		}
	}
	return nil
}
