#!/usr/bin/env bash
# Times llama.cpp's own tools back to back with udgam-ci's engine, on the
# same model, machine and threads: the ratios in BENCHMARKS.md.
#
# llama.cpp is built with its own CMake defaults from the copy the ollama
# module vendors (the commit udgam-ci embeds), into a scratch folder, for the
# measurement only. bench.cpp is llama-bench's prompt test, ppl.cpp
# llama-perplexity's default loop and mc.cpp its --multiple-choice scoring
# (see their headers): llama.cpp's
# repository is too large to fetch here, so its tool programs are not at
# hand, while its library sources are. For udgam-ci's Fresh Text and
# Probe Suite scorings it also prints useful GFLOP/s (scripts/llamacpp/flops)
# as a fraction of the FMA peak measured right after, and the peak memory
# against weights + KV cache + 300 MB (BENCHMARKS.md says how).
#
#	make bench-llamacpp                      # or: bash scripts/llamacpp/run.sh
#	ROUNDS=1 EVERY=60 make bench-llamacpp    # a quicker look
#	UDGAM_BENCH_ITEMS=2000 make bench-llamacpp  # every core item (make's default is 105)
#	PORTABLE=1 make bench-llamacpp           # both sides at x86-64-v3 (AVX2), as on Zen 3
#	FRESH_ONLY=1 ROUNDS=0 make bench-llamacpp  # Fresh Text alone
#	REAL_ONLY=1 make bench-llamacpp          # the real quantized files alone
#	REALMODELS=0 make bench-llamacpp         # without them
#
# PORTABLE=1 builds udgam-ci's x86-64-v3 variant (the Makefile's) and
# llama.cpp without GGML_NATIVE, with its AVX2, FMA, F16C and BMI2 options:
# on an AVX-512 machine both then run the code a Zen 3 runner runs.
#
# Needs cmake and a C++ compiler. About 20 minutes on 2 cores with the
# defaults (6 of them compiling llama.cpp, which a rerun skips; the Probe
# Suite's five scorings of make's 105 items take a few); run it on an idle
# machine.
set -euo pipefail

GO=${GO:-go}
ROUNDS=${ROUNDS:-3}
EVERY=${EVERY:-30} # Fresh Text: every 30th of the 300 mixed documents (10, 67 KB)
THREADS=${THREADS:-2}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${LLAMACPP_WORK:-${TMPDIR:-/tmp}/udgam-llamacpp}
cmake_flags=()
if [ "${PORTABLE:-}" = 1 ]; then
	[ "$(uname -m)" = x86_64 ] || { echo "run.sh: PORTABLE=1 is x86-64-v3, and this machine is $(uname -m)" >&2; exit 1; }
	work=$work-x86-64-v3
	cmake_flags=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON)
fi

command -v cmake >/dev/null || { echo "run.sh needs cmake (apt-get install cmake)" >&2; exit 1; }
cd "$root"
eval "$(make -s env)"
# The module as downloaded, not the edited copy the workspace names: the
# anchor is llama.cpp's own default build.
ollama=$(GOWORK=off $GO list -m -f '{{.Dir}}' github.com/ollama/ollama)

echo "building llama.cpp (CMake, Release, ${cmake_flags[*]:-native}) in $work" >&2
mkdir -p "$work/src" "$work/data"
# The sources keep the module's file times (cp -p), so that a rerun
# compiles only what changed; a build from another module starts afresh.
[ "$(cat "$work/module" 2>/dev/null)" = "$ollama" ] || rm -rf "$work/build"
rm -rf "$work/src/ggml" "$work/src/llama"
cp -Rp "$ollama/ml/backend/ggml/ggml" "$work/src/ggml"
cp -Rp "$ollama/llama/llama.cpp" "$work/src/llama"
chmod -R u+w "$work/src"
echo "$ollama" >"$work/module"
cp "$here/ggml.cmake" "$work/src/ggml/CMakeLists.txt"
cp "$here/CMakeLists.txt" "$here/logprob.h" "$here/bench.cpp" "$here/ppl.cpp" "$here/mc.cpp" "$work/src/"
cmake -S "$work/src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release "${cmake_flags[@]}" >"$work/cmake.log" 2>&1 ||
	{ cat "$work/cmake.log" >&2; exit 1; }
cmake --build "$work/build" --target bench ppl mc -j "$(nproc)" >"$work/build.log" 2>&1 ||
	{ tail -30 "$work/build.log" >&2; exit 1; }

echo "building udgam-ci and its engine benchmarks" >&2
make -s build
$GO test -c -o "$work/llama.test" ./runner/llama/
$GO build -o "$work/flops" ./scripts/llamacpp/flops
# The real quantized files make realmodels checks (scripts/realmodels:
# SmolLM2-135M-Instruct Q4_1, Gemma 3 270M Q4_K_M), timed on both tests at
# the end; benchdata tokenizes the Probe Suite's items with each one's own
# tokenizer for mc.
real=()
if [ "${REALMODELS:-1}" != 0 ]; then
	realdir=${UDGAM_REALMODELS:-$(bash scripts/realmodels/install.sh "${UDGAM_PYREF_PYTHON:-$(bash scripts/pyref/install.sh | tail -n 1)/bin/python}" | tail -n 1)}
	real=("$realdir/SmolLM2-135M-Instruct.Q4_1.gguf" "$realdir/gemma-3-270m-q4_k_m.gguf")
fi
# The benchmark model, then its float32 twin (the Probe Suite's check).
models=$($GO run ./scripts/llamacpp/benchdata -out "$work/data" -every "$EVERY" -probes ${real[0]:+-tokenize "$(IFS=,; echo "${real[*]}")"})
model=$(sed -n 1p <<<"$models")
model32=$(sed -n 2p <<<"$models")

export LD_LIBRARY_PATH="$work/build/bin:$work/build/ggml/src:$work/build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
lcpp() { "$work/build/bench" "$model" --threads "$THREADS" "$@"; }
ours() { # ours BENCH [ENV...]: tokens/s of one Go benchmark, 3 iterations
	local bench=$1
	shift
	env "$@" UDGAM_BENCH_GGUF="$model" UDGAM_BENCH_THREADS="$THREADS" "$work/llama.test" \
		-test.run '^$' -test.bench "^${bench}\$" -test.benchtime 3x |
		sed -n 's/.* \([0-9.]*\) tokens\/s.*/\1/p'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
field() { grep -o "\(^\|[ \"]\)$1\"*[=:][0-9.]*" <<<"$2" | head -1 | sed 's/.*[=:]//'; } # field KEY LINE: KEY's first value
# The float32 FMA peak on the same threads, now (BenchmarkFMAPeak, about 2
# s): taken right after each timed udgam-ci scoring, so the fraction below
# compares the engine with the machine as it was.
peak() {
	UDGAM_BENCH_THREADS="$THREADS" "$work/llama.test" -test.run '^$' -test.bench '^BenchmarkFMAPeak$' -test.benchtime 1x |
		sed -n 's/.* \([0-9.]*\) GFLOP\/s.*/\1/p'
}
# efficiency FLOPS SECONDS PEAK: useful GFLOP/s and the fraction of the peak.
efficiency() { awk -v f="$1" -v s="$2" -v p="$3" 'BEGIN { printf "%.1f %.3f", f / s / 1e9, f / s / 1e9 / p }'; }
# rss FILE CMD...: runs CMD, its output as it is, and writes its peak
# resident set in kB to FILE: GNU time's %M, or else the kernel's
# high-water mark (VmHWM) read while CMD runs (growth in its last 50 ms
# would be missed; a finished process has none to read).
rss() {
	local file=$1
	shift
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -f %M -o "$file" "$@"
		return
	fi
	"$@" &
	local pid=$! hwm=0 v
	while v=$(sed -n 's/^VmHWM:[^0-9]*\([0-9]*\).*/\1/p' "/proc/$pid/status" 2>/dev/null) && [ -n "$v" ]; do
		hwm=$v
		sleep 0.05
	done
	echo "$hwm" >"$file"
	wait "$pid"
}
# Memory: each udgam-ci scoring's peak resident set (the mmapped weights it
# touched included) against the budget of issue 17, weights (the GGUF's
# size) + the float32 KV cache of the cells the command opens + 300 MB.
memory_table() {
	echo
	echo "| udgam-ci memory (MB, 10^6 bytes) | peak RSS | weights | KV cache | weights + KV + 300 | within budget |"
	echo "|---|---|---|---|---|---|"
	printf '%s\n' "${memory[@]}"
}
# The memory budget, weights + KV cache + 300 MB, for the tables at the end.
memory=()
# budget NAME MODEL RSSFILE KVBYTES: one row of the memory table.
budget() {
	local kb
	kb=$(tail -1 "$3")
	memory+=("$(awk -v name="$1" -v kb="$kb" -v w="$(stat -c %s "$2")" -v kv="$4" 'BEGIN {
		rss = kb * 1024; b = w + kv + 300e6
		printf "| %s | %.0f | %.0f | %.0f | %.0f | %s |", name, rss / 1e6, w / 1e6, kv / 1e6, b / 1e6, rss <= b ? "yes" : "no"
	}')")
}

mcrun() { # mcrun MODEL TOKENS [ARGS...]
	local m=$1 t=$2
	shift 2
	"$work/build/mc" "$m" "$work/data/$t" --ctx 1024 --parallel 128 --threads "$THREADS" "$@"
}
# real_files times each real quantized file on both tests, llama.cpp's loop
# (its default float16 KV cache, and float32 as udgam-ci's) and udgam-ci's
# back to back: Fresh Text as the rows below time it (llama-perplexity -c
# 2048 against score fresh, window 2048, stride 1024), the Probe Suite as
# mc -c 1024 -np 128 against score probes on the same token ids (checked
# with probecheck -inform; the values differ: llama.cpp rounds activations
# to 8 bits, udgam-ci multiplies them in float32).
real_files() {
	[ ${#real[@]} -gt 0 ] || return 0
	local f n a a32 s ours m m32 p ips rows=()
	for f in "${real[@]}"; do
		n=$(basename "$f" .gguf)
		echo "$n, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
		a=$("$work/build/ppl" "$f" "$work/data/docs.txt" --ctx 2048 --threads "$THREADS")
		a32=$("$work/build/ppl" "$f" "$work/data/docs.txt" --ctx 2048 --threads "$THREADS" --kv f32)
		rm -f "$work/data/$n-fresh.jsonl"
		s=$(bin/udgam-ci score fresh --model "$f" --data "$work/data/docs.jsonl" --out "$work/data/$n-fresh.jsonl" \
			--window 2048 --stride 1024 --threads "$THREADS" --json 2>/dev/null)
		ours=$(sed -n 's/.*"tokens_per_second":\([0-9.]*\).*/\1/p' <<<"$s")
		a=$(field scored_per_s "$a")
		a32=$(field scored_per_s "$a32")
		rows+=("| $n | Fresh Text, scored tokens/s | $a | $a32 | $(printf '%.1f' "$ours") | $(ratio "$ours" "$a") | $(ratio "$ours" "$a32") |")
		m=$(mcrun "$f" "probes-$n.tok")
		m32=$(mcrun "$f" "probes-$n.tok" --kv f32 --values "$work/data/probes-mc-$n.tsv")
		rm -f "$work/data/$n-probes.jsonl"
		p=$(bin/udgam-ci score probes --model "$f" --items "$work/data/probes.jsonl" --out "$work/data/$n-probes.jsonl" \
			--threads "$THREADS" --json 2>/dev/null)
		$GO run ./scripts/llamacpp/probecheck -inform "$work/data/probes-mc-$n.tsv" "$work/data/$n-probes.jsonl" >&2 ||
			{ echo "$n: mc and udgam-ci did not score the same items and tokens (above)" >&2; exit 1; }
		ips=$(awk -v n="$(field items "$p")" -v s="$(field seconds "$p")" 'BEGIN { printf "%.2f", n / s }')
		rows+=("| $n | Probe Suite, items/s | $(field items_per_s "$m") | $(field items_per_s "$m32") | $ips | $(ratio "$ips" "$(field items_per_s "$m")") | $(ratio "$ips" "$(field items_per_s "$m32")") |")
	done
	echo
	echo "| real file | test | llama.cpp (float16 KV, its default) | llama.cpp, float32 KV | udgam-ci (float32 KV) | ratio to the default | ratio, float32 KV |"
	echo "|---|---|---|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
}
if [ "${REAL_ONLY:-}" = 1 ]; then
	real_files
	exit 0
fi

echo "| round | workload | llama.cpp tokens/s | udgam-ci tokens/s | ratio |"
echo "|---|---|---|---|---|"
for round in $(seq "$ROUNDS"); do
	echo "round $round, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
	a=$(lcpp) # llama-bench -p 2048 -n 0 exactly: batch 2048, float16 cache, last logit
	b=$(ours BenchmarkSmolSeq2048LastLogit UDGAM_BENCH_KVF16=1)
	echo "| $round | llama-bench -p 2048 (float16 KV, last logit) | $a | $b | $(ratio "$b" "$a") |"
	a=$(lcpp --kv f32 --batch 512)
	b=$(ours BenchmarkSmolSeq2048LastLogit)
	echo "| $round | the same, float32 KV, batch 512 | $a | $b | $(ratio "$b" "$a") |"
	a=$(lcpp --kv f32 --batch 512 --all-logits)
	b=$(ours BenchmarkSmolSeq2048)
	echo "| $round | every logit, float32 KV (how udgam-ci scores) | $a | $b | $(ratio "$b" "$a") |"
done

# Fresh Text: time per scored token, llama-perplexity -c 2048 on the
# documents joined into one text, udgam-ci on the documents themselves.
echo "Fresh Text, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
ppl=$("$work/build/ppl" "$model" "$work/data/docs.txt" --ctx 2048 --threads "$THREADS")
# The same loop with a float32 cache, as udgam-ci scores: equal exactness.
# (llama.cpp's float16 cache is faster on a CPU because ggml then rounds the
# permuted queries into a contiguous float16 copy that tinyBLAS takes.)
ppl32=$("$work/build/ppl" "$model" "$work/data/docs.txt" --ctx 2048 --threads "$THREADS" --kv f32)
rm -f "$work/data/run.jsonl"
summary=$(rss "$work/data/run.rss" bin/udgam-ci score fresh --model "$model" --data "$work/data/docs.jsonl" --out "$work/data/run.jsonl" \
	--window 2048 --stride 1024 --threads "$THREADS" --json 2>/dev/null)
fresh_peak=$(peak)
# The useful FLOPs of the windows score fresh sent (runner.FLOPs) and the
# float32 KV cache of the one window it opens.
fresh_flops=$("$work/flops" -model "$model" -fresh "$work/data/docs.jsonl" -window 2048 -stride 1024)
read -r fresh_gflops fresh_frac <<<"$(efficiency "$(field flops "$fresh_flops")" "$(field seconds "$summary")" "$fresh_peak")"
budget "score fresh, window 2048" "$model" "$work/data/run.rss" "$(field kv_bytes "$fresh_flops")"
ppl_rate=$(sed -n 's/.*scored_per_s=\([0-9.]*\).*/\1/p' <<<"$ppl")
ppl32_rate=$(sed -n 's/.*scored_per_s=\([0-9.]*\).*/\1/p' <<<"$ppl32")
our_rate=$(sed -n 's/.*"tokens_per_second":\([0-9.]*\).*/\1/p' <<<"$summary") # every token is scored
echo
echo "llama-perplexity -c 2048: $ppl"
echo "llama-perplexity -c 2048 --kv f32: $ppl32"
echo "udgam-ci score fresh: $summary"
echo
echo "| Fresh Text | scored tokens/s |"
echo "|---|---|"
echo "| llama-perplexity -c 2048 (float16 KV, its default) | $ppl_rate |"
echo "| llama-perplexity -c 2048, float32 KV | $ppl32_rate |"
echo "| udgam-ci score fresh, window 2048, stride 1024 (float32 KV) | $(printf '%.1f' "$our_rate") |"
echo "| ratio to llama-perplexity's default (above 1 is faster) | $(ratio "$our_rate" "$ppl_rate") |"
echo "| ratio to llama-perplexity, float32 KV (equal exactness) | $(ratio "$our_rate" "$ppl32_rate") |"
echo
echo "udgam-ci score fresh, useful FLOPs: $fresh_flops"
echo
echo "| Fresh Text, udgam-ci | useful GFLOP/s | FMA peak GFLOP/s (just after) | fraction of the peak |"
echo "|---|---|---|---|"
echo "| score fresh, window 2048, stride 1024 | $fresh_gflops | $fresh_peak | $fresh_frac |"

if [ "${FRESH_ONLY:-}" = 1 ]; then
	memory_table
	exit 0
fi

# Probe Suite: time per scored item. Both programs score the same core items
# (bench.CoreSample: UDGAM_BENCH_ITEMS of them, the Go benchmark's stratified
# sample; 2000 for all) from the same token ids: benchdata -probes tokenized
# them once the way udgam-ci does. mc is llama-perplexity --multiple-choice
# with -c 1024 -np 128: the 1,024 cells udgam-ci's probes context has, and
# the most items llama-perplexity packs into a batch (its own default, -c 512
# -np 4, packs one four-choice item). Both times are the scoring loop, not
# the model's loading: mc's packs, decodes and takes log-softmaxes (the ids
# come ready-made; llama-perplexity too tokenizes before its loop), ours
# tokenizes, scores and writes each record. Both count the same items and
# the same scored (continuation) tokens, so the two ratios agree; evaluated
# tokens differ (llama.cpp decodes once what an item's choices begin with;
# udgam-ci decodes once what the items packed into a step begin with,
# runner.Limits.ShareStarts: their prompts' templates and their choices'
# common first tokens).
echo "Probe Suite, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
ourprobes() { # ourprobes MODEL OUT: the --json summary; the peak resident set goes to OUT.rss
	rm -f "$2"
	rss "$2.rss" bin/udgam-ci score probes --model "$1" --items "$work/data/probes.jsonl" --out "$2" --threads "$THREADS" --json 2>/dev/null
}
mc=$(mcrun "$model" probes.tok)
mc32=$(mcrun "$model" probes.tok --kv f32 --values "$work/data/probes-mc.tsv")
psummary=$(ourprobes "$model" "$work/data/probes-run.jsonl")
probes_peak=$(peak)
# The ruler, on the float32 twin: mc's float32-cache values are udgam-ci's,
# every choice within 1e-4 nats per token, the same picks. (On the F16
# model ggml's float16 rounding of activations moves values by ~1e-3 nats
# with the batch's shape, in llama.cpp alone: there the same items and
# tokens are checked and the differences printed.)
mcw=$(mcrun "$model32" probes-f32.tok --kv f32 --values "$work/data/probes-mc-f32.tsv")
wsummary=$(ourprobes "$model32" "$work/data/probes-run-f32.jsonl")
w_peak=$(peak)
# The useful FLOPs of the requests score probes sent (the twin's tokenizer
# may split otherwise), and the float32 KV cache of the context it opens.
probes_flops=$("$work/flops" -model "$model" -probes "$work/data/probes.jsonl")
w_flops=$("$work/flops" -model "$model32" -probes "$work/data/probes.jsonl")
read -r probes_gflops probes_frac <<<"$(efficiency "$(field flops "$probes_flops")" "$(field seconds "$psummary")" "$probes_peak")"
read -r w_gflops w_frac <<<"$(efficiency "$(field flops "$w_flops")" "$(field seconds "$wsummary")" "$w_peak")"
budget "score probes" "$model" "$work/data/probes-run.jsonl.rss" "$(field kv_bytes "$probes_flops")"
budget "score probes, float32 weights" "$model32" "$work/data/probes-run-f32.jsonl.rss" "$(field kv_bytes "$w_flops")"
check=$($GO run ./scripts/llamacpp/probecheck -tol 1e-4 "$work/data/probes-mc-f32.tsv" "$work/data/probes-run-f32.jsonl") ||
	{ echo "Probe Suite: mc (--kv f32) and udgam-ci disagree on the float32 twin (above); no rates printed" >&2; exit 1; }
inform=$($GO run ./scripts/llamacpp/probecheck -inform "$work/data/probes-mc.tsv" "$work/data/probes-run.jsonl") ||
	{ echo "Probe Suite: mc and udgam-ci did not score the same items and tokens (above)" >&2; exit 1; }
rates() { # rates SUMMARY MC: items/s and scored tokens/s of a udgam-ci summary (MC's scored tokens: the same ids)
	awk -v n="$(field items "$1")" -v t="$(field scored "$2")" -v s="$(field seconds "$1")" \
		'BEGIN { printf "%.2f %.1f", n / s, t / s }'
}
read -r our_ips our_tps <<<"$(rates "$psummary" "$mc32")"
read -r w_ips w_tps <<<"$(rates "$wsummary" "$mcw")"
echo
echo "mc -c 1024 -np 128: $mc"
echo "mc -c 1024 -np 128 --kv f32: $mc32"
echo "mc -c 1024 -np 128 --kv f32, float32 weights: $mcw"
echo "udgam-ci score probes: items=$(field items "$psummary") seconds=$(field seconds "$psummary"); float32 weights: seconds=$(field seconds "$wsummary")"
echo "check, float32 weights (mc --kv f32 against udgam-ci, per item, 1e-4 nats per token): $check"
echo "the same, F16 weights (not judged): $inform"
echo
echo "| Probe Suite, $(field items "$psummary") core items | items/s | scored tokens/s | ours / theirs (above 1 is faster) |"
echo "|---|---|---|---|"
echo "| mc -c 1024 -np 128 (float16 KV, llama.cpp's default) | $(field items_per_s "$mc") | $(field scored_per_s "$mc") | $(ratio "$our_ips" "$(field items_per_s "$mc")") |"
echo "| mc -c 1024 -np 128, float32 KV (equal exactness) | $(field items_per_s "$mc32") | $(field scored_per_s "$mc32") | $(ratio "$our_ips" "$(field items_per_s "$mc32")") |"
echo "| udgam-ci score probes (float32 KV) | $our_ips | $our_tps | |"
echo "| float32 weights: mc, float32 KV | $(field items_per_s "$mcw") | $(field scored_per_s "$mcw") | $(ratio "$w_ips" "$(field items_per_s "$mcw")") |"
echo "| float32 weights: udgam-ci score probes | $w_ips | $w_tps | |"
echo
echo "udgam-ci score probes, useful FLOPs: $probes_flops; float32 weights: $w_flops"
echo
echo "| Probe Suite, udgam-ci | useful GFLOP/s | FMA peak GFLOP/s (just after) | fraction of the peak |"
echo "|---|---|---|---|"
echo "| score probes | $probes_gflops | $probes_peak | $probes_frac |"
echo "| score probes, float32 weights | $w_gflops | $w_peak | $w_frac |"

# What packing can gain here: llama.cpp decoding one sequence of B tokens
# from an empty cache per call (a document of B tokens per decode), every
# logit asked for. Packing short documents together can at best move a
# 250-token document's rate to the largest B's.
echo "packing ceiling, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
sizes=(64 128 256 512 1024 2048)
rates=()
for b in "${sizes[@]}"; do
	rates+=("$(lcpp --kv f32 --batch "$b" --ubatch "$b" --prompt "$b" --all-logits)")
done
best=$(printf '%s\n' "${rates[@]}" | sort -g | tail -1)
echo
echo "| tokens per decode (one sequence) | llama.cpp tokens/s | rate / best rate |"
echo "|---|---|---|"
for i in "${!sizes[@]}"; do
	echo "| ${sizes[$i]} | ${rates[$i]} | $(ratio "${rates[$i]}" "$best") |"
done

real_files
memory_table
