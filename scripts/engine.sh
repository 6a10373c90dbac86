#!/usr/bin/env bash
# engine.sh OLLAMA_DIR GO_WORK writes a Go workspace file that builds
# against a copy of the ollama module with udgam-ci's edits to llama.cpp,
# and prints its path (the Makefile exports it as GOWORK). Every edit the
# engine carries lives here:
#
#  - ggml-cpu/vec.h defines GGML_GELU_FP16 and GGML_GELU_QUICK_FP16, which
#    round every GELU input and output through float16 (up to ~1e-3 per
#    activation, ~3e-3 nats per token on GPT-2 and Gemma 3); without them
#    ggml evaluates the formula in float32.
#  - llama.cpp's gptneox graph applies the tanh form of GELU, but Pythia's
#    "gelu" (GPTNeoXConfig's default) is the erf form: the copy gives
#    gptneox ggml's GELU_ERF. The converter refuses other activations there.
#  - ggml-cpu's matrix product hands llamafile's tinyBLAS only a contiguous
#    second operand, so attention's scores (keys times the permuted queries)
#    fell to one dot product per output (about a third of all CPU time on
#    SmolLM2-135M's shape). tinyBLAS takes a row stride, and rows are
#    contiguous whenever ggml gets here (it asserts so): the copy passes
#    strided operands to it too. Same arithmetic per output, summed in
#    tinyBLAS's order (BENCHMARKS.md: 1.2-1.4x on a 2,048-token window).
#  - ggml-cpu's rope takes each angle, position times base^(-2i/n), by
#    repeated float32 multiplication and hands cosf/sinf that float32
#    angle: at position p it is off by up to about p * 6e-8 radians, so
#    the error grows with the position (Gemma 3: 1.4e-4 nats per token by
#    2,048; 6e-6 once its reference takes ggml's angles). The copy computes
#    the angles and their cos/sin in double and rounds only the results
#    (about 0.5% more CPU time on SmolLM2-135M's shape, estimated from a
#    timed loop of ggml's shape, BENCHMARKS.md).
#  - tinyBLAS's float32 kernel (attention's products, above) loads 4+3
#    vectors per 12 FMAs in its 4x3 tile, but GCC folds the loads into the
#    FMAs and repeats them for every row: 16 loads, where Zen 3 issues two
#    256-bit loads a cycle. The copy keeps each loaded vector in a register
#    (an empty asm) on AVX2 without AVX-512; the same FMAs on the same
#    values, so the same results (BENCHMARKS.md: 15% less time in that
#    kernel, 5% in all). AVX-512 builds are unchanged (not measured).
#  - Matrix products of 128 rows or more of float16, bfloat16 or float32
#    (the weights, and attention's keys) times 128 rows or more (32 for
#    float32 at k up to 128, attention's scores, and for all float32 on
#    AVX2) go to
#    scripts/engine/gemm.c on x86 with AVX2, FMA and F16C: tinyBLAS loads
#    and widens 7 vectors per 12 FMAs in every tile and, at attention's k
#    of 64, spends much of each tile summing lanes; gemm.c packs each
#    operand once and runs an outer-product kernel, 2 loads and NR
#    broadcasts per 2*NR FMAs: 16x6 on AVX2 (BENCHMARKS.md, "Third
#    pass"), 32x12 where the build has AVX-512 (the native build on an
#    AVX-512 CPU and the x86-64-v4 variant; there the AVX2 kernel ran at
#    0.5-0.8 of tinyBLAS's 16 lanes and the 32x12 one at 1.0-1.3x, 2-3x on
#    attention's scores, BENCHMARKS.md issue 31). Bfloat16 weights on a
#    CPU with AVX512-BF16 (checked at run time, so x86-64-v4 gets it too)
#    go through vdpbf16ps in pairs of k, twice the FMA rate (1.0-1.3x
#    tinyBLAS's own vdpbf16ps kernel, 2x+ its widening one). Activations
#    are rounded to float16 or bfloat16 as ggml rounds them for its own
#    kernels, so every product is the same; only float32 summation order
#    differs (and vdpbf16ps flushes denormals, as ggml's bfloat16 kernel
#    does). ggml's plan reserves the panels in its work buffer.
#  - Attention with flash attention on (runner/llama's default where the
#    kernel is compiled in) goes to scripts/engine/attn.c on x86 with
#    AVX-512 when its inputs are float32 queries, float32 or float16 keys
#    and values, and no ALiBi, soft-capping or sinks (others stay with
#    ggml). ggml's CPU kernel takes one query and one key at a time and,
#    with a float16 V, sums in float16; without flash attention ggml writes
#    every score of the window, masked ones included, to memory (38 MB a
#    layer at 2,048 tokens) before its softmax. attn.c tiles queries and
#    keys, skips the tiles the mask hides entirely and keeps scores, the
#    scores and probabilities in float32 (BENCHMARKS.md, issue 31). It
#    takes each query's maximum over all its keys before any sum, and sums
#    the probabilities and P.V in double, rounded to float32 once, so a
#    query's bits do not depend on where its sequence's cells lie in the
#    shared cache, nor in what order (an online softmax rescaled at fixed
#    64-key blocks in float32 did; quantized weights' 8-bit activations
#    turned that into 2% of a document's bits, issue 40). ggml's own
#    kernel (AVX2) goes key after key in cell order, skipping hidden keys:
#    invariant to offsets, not to an order the cache's freed cells change.
#    llama.cpp's graph casts a float32 cache to float16 before flash
#    attention (ggml's GPU kernels want it); the copy keeps it float32.
#  - ggml's own flash attention (arm64, and x86 without AVX-512, where
#    attn.c does not take it) keeps an online softmax in the cells' order,
#    so a query's bits changed with where freed cells put its keys (up to
#    0.06 nats a token on quantized models on arm64, TestQuantizedExact).
#    On a float32 cache (udgam-ci's; a float16 one keeps ggml's loop, and
#    its float16 sums) the copy does as attn.c: the maximum over every key
#    first, then the probabilities and P.V summed in double and rounded
#    once (the scores are computed twice; attention sinks keep ggml's
#    loop).
#  - On arm64 without float16 arithmetic (armv8-a, the portable build)
#    tinyBLAS multiplies float16 weights by the float32 activations as
#    they are, where x86 (tinyBLAS and gemm.c) and ggml's own dot product
#    round the activations to float16 first (ggml's vec_dot_type): the
#    same model gave other products on arm64 (up to 5e-4 of a product
#    sum in runner/llama's TestMatMulExact). The copy hands tinyBLAS's
#    NEON kernel float16 activations, widened to float32 with the weights
#    and summed in float32, as on x86. Float16 arithmetic itself (Neoverse
#    CPUs have it) would sum products in float16; the Makefile compiles
#    arm64 without it (+nofp16) and runner/llama refuses a build with it.
#
# go build -overlay cannot replace files in the module cache, so the copy
# (the module as downloaded plus these edits; no upstream source lives in
# this repository) is made once per machine, module version and version of
# this script and gemm.c under ${UDGAM_CI_BUILD_CACHE:-~/.cache/udgam-ci},
# where every checkout with the same edits shares it and so llama.cpp's compiled
# objects; checkouts with other edits (another branch) get their own copy
# instead of rewriting one another's. runner/llama refuses GELU and rope
# models in a binary built without it.
set -euo pipefail
if [ $# -ne 2 ] || [ -z "$1" ]; then
	echo "usage: engine.sh OLLAMA_DIR GO_WORK" >&2
	exit 2
fi
mod=$1
work=$2
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${UDGAM_CI_BUILD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/udgam-ci}
copy=$cache/ollama-engine/$(basename "$mod")-$(cat "$0" "$root/scripts/engine/gemm.c" "$root/scripts/engine/attn.c" | cksum | cut -d" " -f1)
fail() { echo "engine.sh: $*" >&2; exit 1; }

if [ ! -f "$copy/.udgam-copied" ]; then
	mkdir -p "$(dirname "$copy")"
	tmp=$(mktemp -d "$copy.tmp.XXXXXX")
	cp -R "$mod/." "$tmp"
	chmod -R u+w,go+rX "$tmp"
	touch "$tmp/.udgam-copied"
	# Another make may have finished first (its copy is the same); then mv
	# would put this one inside it.
	if [ ! -e "$copy" ]; then mv "$tmp" "$copy" || true; fi
	rm -rf "$tmp" "$copy/$(basename "$tmp")"
	[ -f "$copy/.udgam-copied" ] || fail "could not create $copy"
fi

# edit FILE: stdin (FILE edited) replaces the copy's FILE when it differs,
# whole, so a build reading it meanwhile sees one or the other.
edit() {
	local tmp
	tmp=$(mktemp "$copy/$1.XXXXXX")
	cat >"$tmp"
	chmod 644 "$tmp"
	if cmp -s "$tmp" "$copy/$1"; then rm -f "$tmp"; else mv "$tmp" "$copy/$1"; fi
}

vec=ml/backend/ggml/ggml/src/ggml-cpu/vec.h
for d in GGML_GELU_FP16 GGML_GELU_QUICK_FP16; do
	[ "$(grep -cx "#define $d" "$mod/$vec")" = 1 ] ||
		fail "$mod/$vec does not define $d on a line of its own; the ollama module changed: update scripts/engine.sh"
done
sed -e '/^#define GGML_GELU_FP16$/d' -e '/^#define GGML_GELU_QUICK_FP16$/d' "$mod/$vec" | edit "$vec"

graph=llama/llama.cpp/src/llama-graph.cpp
gelu='cur = ggml_gelu\(ctx0, cur\);\n(\s*)cb\(cur, "ffn_gelu", il\);'
[ "$(perl -0777 -ne "my \$n = () = /$gelu/g; print \$n" "$mod/$graph")" = 1 ] ||
	fail "$mod/$graph does not apply ffn_gelu once; the ollama module changed: update scripts/engine.sh"
graphtmp=$(mktemp)
perl -0777 -pe "s/$gelu/cur = arch == LLM_ARCH_GPTNEOX ? ggml_gelu_erf(ctx0, cur) : ggml_gelu(ctx0, cur);\n\$1cb(cur, \"ffn_gelu\", il);/" "$mod/$graph" >"$graphtmp"

mulmat=ml/backend/ggml/ggml/src/ggml-cpu/ggml-cpu.c
strided='const bool src1_cont = ggml_is_contiguous\(src1\);(\n\n\s*if \(src1_cont\) \{\n\s*for \(int64_t i13 = 0; i13 < ne13; i13\+\+\)\n\s*for \(int64_t i12 = 0; i12 < ne12; i12\+\+\)\n\s*if \(!llamafile_sgemm\(params,)'
[ "$(perl -0777 -ne "my \$n = () = /$strided/g; print \$n" "$mod/$mulmat")" = 1 ] ||
	fail "$mod/$mulmat does not try llamafile_sgemm on contiguous operands once; the ollama module changed: update scripts/engine.sh"
# swap FILE FROM TO replaces the one occurrence of the literal FROM in
# FILE, a working copy of the module's $target.
swap() {
	local n
	n=$(FROM=$2 perl -0777 -ne 'my $n = () = /\Q$ENV{FROM}\E/g; print $n' "$1")
	[ "$n" = 1 ] || fail "$mod/$target has $n occurrences of '$2', want 1; the ollama module changed: update scripts/engine.sh"
	FROM=$2 TO=$3 perl -0777 -pi -e 's/\Q$ENV{FROM}\E/$ENV{TO}/' "$1"
}

# Large products to gemm.c (see the header): its source beside
# ggml-cpu.c, so cgo compiles it into the same package, and three hooks.
target=$mulmat
mmtmp=$(mktemp)
perl -0777 -pe "s/$strided/const bool src1_cont = ggml_is_contiguous(src1) || nb11 % ggml_type_size(src1->type) == 0;\$1/" "$mod/$mulmat" >"$mmtmp"
swap "$mmtmp" '
void ggml_compute_forward_mul_mat(
' '
// udgam-ci (scripts/engine.sh): large products to udgam-gemm.c.
bool   udgam_gemm(const struct ggml_compute_params * params, struct ggml_tensor * dst);
size_t udgam_gemm_wsize(const struct ggml_tensor * dst, int n_threads);

void ggml_compute_forward_mul_mat(
'
swap "$mmtmp" '    //   compute by src0 rows
' '    //   compute by src0 rows

    if (udgam_gemm(params, dst)) {
        return;
    }
'
swap "$mmtmp" '                            cur = ggml_row_size(vec_dot_type, ggml_nelements(node->src[1]));
                        }
' '                            cur = ggml_row_size(vec_dot_type, ggml_nelements(node->src[1]));
                        }
                        cur = MAX(cur, udgam_gemm_wsize(node, n_tasks));
'
edit "$mulmat" <"$mmtmp"
rm -f "$mmtmp"
edit "${mulmat%/*}/udgam-gemm.c" <"$root/scripts/engine/gemm.c"

# rope: angles, and their cos and sin, in double (see the header).
rope=ml/backend/ggml/ggml/src/ggml-cpu/ops.cpp
target=$rope
ropetmp=$(mktemp)
cp "$mod/$rope" "$ropetmp"
swap "$ropetmp" 'const float theta_scale = powf(freq_base, -2.0f/n_dims);' 'const double theta_scale = pow(freq_base, -2.0/n_dims);'
yarn='https://github.com/jquesnelle/yarn/blob/master/scaled_rope/LlamaYaRNScaledRotaryEmbedding.py'
swap "$ropetmp" "float sin_sign, float theta_scale) {
    // ref: $yarn
    float theta = theta_base;" "float sin_sign, double theta_scale) {
    // ref: $yarn
    double theta = theta_base;"
swap "$ropetmp" 'float theta_extrap,' 'double theta_extrap,'
swap "$ropetmp" 'float theta_interp = freq_scale * theta_extrap;' 'double theta_interp = freq_scale * theta_extrap;'
swap "$ropetmp" 'float theta = theta_interp;' 'double theta = theta_interp;'
swap "$ropetmp" '*cos_theta = cosf(theta) * mscale;' '*cos_theta = cos(theta) * mscale;'
swap "$ropetmp" '*sin_theta = sinf(theta) * mscale;' '*sin_theta = sin(theta) * mscale;'

# Attention to attn.c (see the header): its source beside ggml-cpu.c, and
# one hook at the top of ggml's FLASH_ATTN_EXT, in the same ops.cpp.
swap "$ropetmp" '
void ggml_compute_forward_flash_attn_ext(
        const ggml_compute_params * params,
        ggml_tensor * dst) {
' '
// udgam-ci (scripts/engine.sh): tiled causal attention in udgam-attn.c.
extern "C" bool udgam_attn(const struct ggml_compute_params * params, struct ggml_tensor * dst);

void ggml_compute_forward_flash_attn_ext(
        const ggml_compute_params * params,
        ggml_tensor * dst) {
    if (udgam_attn(params, dst)) {
        return;
    }
'
# ggml's own flash attention (where attn.c does not take it: arm64, x86
# without AVX-512) on a float32 cache: each query's maximum over its keys
# first, then the probabilities and P.V summed in double and rounded once
# (see the header).
swap "$ropetmp" '
        // online softmax / attention
' '
        // udgam-ci (scripts/engine.sh): the maximum first, then sums in
        // double rounded once, so the order of the cells does not matter.
        if (!sinks && k->type == GGML_TYPE_F32 && v->type == GGML_TYPE_F32) {
            float Mx = -INFINITY;
            for (int pass = 0; pass < 2; ++pass) {
                double Sd = 0.0;
                double acc[DV];
                if (pass == 1) {
                    memset(acc, 0, sizeof(acc));
                }
                for (int64_t ic = 0; ic < nek1; ++ic) {
                    const float mv = mp ? slope*GGML_CPU_FP16_TO_FP32(mp[ic]) : 0.0f;
                    if (mv == -INFINITY) {
                        continue;
                    }
                    float s;
                    kq_vec_dot(DK, &s, 0, (const char *) k->data + (ic*nbk1 + ik2*nbk2 + ik3*nbk3), 0, Q_q, 0, 1);
                    s = s*scale;
                    if (logit_softcap != 0.0f) {
                        s = logit_softcap*tanhf(s);
                    }
                    s += mv;
                    if (pass == 0) {
                        Mx = s > Mx ? s : Mx;
                        continue;
                    }
                    const float p = expf(s - Mx);
                    const float * vf = (const float *) ((const char *) v->data + (ic*nbv1 + iv2*nbv2 + iv3*nbv3));
                    Sd += p;
                    for (int64_t d = 0; d < DV; ++d) {
                        acc[d] += (double) p * vf[d];
                    }
                }
                if (pass == 1) {
                    for (int64_t d = 0; d < DV; ++d) {
                        VKQ32[d] = Sd == 0.0 ? 0.0f : (float) (acc[d] / Sd);
                    }
                }
            }
            memcpy((char *) dst->data + (iq3*ne2*ne1 + iq2 + iq1*ne1)*nb1, VKQ32, nb1);
            continue;
        }

        // online softmax / attention
'
edit "${rope%/*}/udgam-attn.c" <"$root/scripts/engine/attn.c"
edit "$rope" <"$ropetmp"
rm -f "$ropetmp"
# llama.cpp's graph casts a float32 cache to float16 for flash attention
# (ggml's GPU kernels want it): on the CPU that rounds every key and value
# to float16 and costs a copy a layer. The copy hands the cache as it is.
target=$graph
swap "$graphtmp" '
        // this can happen when KV cache is not used (e.g. an embedding model with non-causal attn)
        if (k->type == GGML_TYPE_F32) {
            k = ggml_cast(ctx0, k, GGML_TYPE_F16);
        }

        if (v->type == GGML_TYPE_F32) {
            v = ggml_cast(ctx0, v, GGML_TYPE_F16);
        }
' '
        // udgam-ci (scripts/engine.sh): a float32 cache stays float32.
'
edit "$graph" <"$graphtmp"
rm -f "$graphtmp"
sgemm=ml/backend/ggml/ggml/src/ggml-cpu/llamafile/sgemm.cpp
class='(\ntemplate <int KN, typename D, typename V, typename TA, typename TB, typename TC>\nclass tinyBLAS \{\n)'
[ "$(perl -0777 -ne "my \$n = () = m{$class}g; print \$n" "$mod/$sgemm")" = 1 ] &&
	[ "$(grep -c 'load<V>([AB] + ld[ab] \* ([ij][ij] + [ij]) + l)' "$mod/$sgemm")" = 4 ] ||
	fail "$mod/$sgemm does not define tinyBLAS with four operand loads; the ollama module changed: update scripts/engine.sh"
register='
// udgam-ci (scripts/engine.sh): an operand vector is loaded once per step
// and stays in a register; otherwise GCC folds float32 loads into the FMAs
// and repeats each for every row of the tile.
template <typename V> static inline V in_register(V v) {
#if defined(__AVX2__) && !defined(__AVX512F__) && defined(__GNUC__)
    __asm__("" : "+x"(v));
#endif
    return v;
}'
target=$sgemm
sgemmtmp=$(mktemp)
REGISTER=$register perl -0777 -pe "s{$class}{\$ENV{REGISTER}\n\$1}; s{(load<V>\([AB] \+ ld[ab] \* \([ij][ij] \+ [ij]\) \+ l\))}{in_register(\$1)}g" "$mod/$sgemm" >"$sgemmtmp"
# arm64: float16 weights against float16 activations, both widened to
# float32 (see the header), instead of against float32 activations.
swap "$sgemmtmp" '        if (Btype == GGML_TYPE_F32) {
            tinyBLAS<4, float32x4_t, float32x4_t, ggml_fp16_t, float, float> tb{ params,
                k, (const ggml_fp16_t *)A, lda,
                (const float *)B, ldb,' '        if (Btype == GGML_TYPE_F16) {
            tinyBLAS<4, float32x4_t, float32x4_t, ggml_fp16_t, ggml_fp16_t, float> tb{ params,
                k, (const ggml_fp16_t *)A, lda,
                (const ggml_fp16_t *)B, ldb,'
edit "$sgemm" <"$sgemmtmp"
rm -f "$sgemmtmp"

goversion=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$root/go.mod")
mkdir -p "$(dirname "$work")"
tmp=$(mktemp "$work.XXXXXX")
printf 'go %s\n\nuse %s\n\nreplace github.com/ollama/ollama => %s\n' "$goversion" "$root" "$copy" >"$tmp"
if cmp -s "$tmp" "$work"; then rm -f "$tmp"; else mv "$tmp" "$work"; fi
echo "$work"
