#!/usr/bin/env bash
# Times llama.cpp's own tools back to back with udgam-ci's engine, on the
# same model, machine and threads: the ratios in BENCHMARKS.md.
#
# llama.cpp is built with its own CMake defaults from the copy the ollama
# module vendors (the commit udgam-ci embeds), into a scratch folder, for the
# measurement only. bench.cpp is llama-bench's prompt test and ppl.cpp
# llama-perplexity's default loop (see their headers): llama.cpp's
# repository is too large to fetch here, so its tool programs are not at
# hand, while its library sources are.
#
#	make bench-llamacpp                      # or: bash scripts/llamacpp/run.sh
#	ROUNDS=1 EVERY=60 make bench-llamacpp    # a quicker look
#
# Needs cmake and a C++ compiler. About 20 minutes on 2 cores with the
# defaults; run it on an idle machine.
set -euo pipefail

GO=${GO:-go}
ROUNDS=${ROUNDS:-3}
EVERY=${EVERY:-30} # Fresh Text: every 30th of the 300 mixed documents (10, 67 KB)
THREADS=${THREADS:-2}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${LLAMACPP_WORK:-${TMPDIR:-/tmp}/udgam-llamacpp}

command -v cmake >/dev/null || { echo "run.sh needs cmake (apt-get install cmake)" >&2; exit 1; }
cd "$root"
eval "$(make -s env)"
# The module as downloaded, not the edited copy the workspace names: the
# anchor is llama.cpp's own default build.
ollama=$(GOWORK=off $GO list -m -f '{{.Dir}}' github.com/ollama/ollama)

echo "building llama.cpp (CMake, Release, native) in $work" >&2
mkdir -p "$work/src" "$work/data"
rm -rf "$work/src/ggml" "$work/src/llama"
cp -r "$ollama/ml/backend/ggml/ggml" "$work/src/ggml"
cp -r "$ollama/llama/llama.cpp" "$work/src/llama"
chmod -R u+w "$work/src"
cp "$here/ggml.cmake" "$work/src/ggml/CMakeLists.txt"
cp "$here/CMakeLists.txt" "$here/bench.cpp" "$here/ppl.cpp" "$work/src/"
cmake -S "$work/src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release >"$work/cmake.log" 2>&1 ||
	{ cat "$work/cmake.log" >&2; exit 1; }
cmake --build "$work/build" --target bench ppl -j "$(nproc)" >"$work/build.log" 2>&1 ||
	{ tail -30 "$work/build.log" >&2; exit 1; }

echo "building udgam-ci and its engine benchmarks" >&2
make -s build
$GO test -c -o "$work/llama.test" ./runner/llama/
model=$($GO run ./scripts/llamacpp/benchdata -out "$work/data" -every "$EVERY")

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
summary=$(bin/udgam-ci score fresh --model "$model" --data "$work/data/docs.jsonl" --out "$work/data/run.jsonl" \
	--window 2048 --stride 1024 --threads "$THREADS" --json 2>/dev/null)
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
