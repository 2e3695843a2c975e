#!/usr/bin/env bash
# `pagoda bench serve` against pagoda serve and llama.cpp's llama-server on the same model and machine:
#   1. pagoda, prefix caching on, at each concurrency in CONCS (the table and the plot), PAGODA_NUM_PROMPTS each;
#   2. pagoda with --no-enable-prefix-caching at the same concurrencies (TTFT p99 cached vs uncached);
#   3. ROUNDS interleaved rounds at concurrency C16 of pagoda and llama-server (continuous batching and prompt
#      cache on, one slot per concurrent request), for the output-throughput ratio (medians).
# Workload: SHARED-token shared prefix + INPUT unique tokens, OUTPUT tokens out (ignore_eos), token-id prompts.
# Usage: bench/compare_serve.sh MODEL.gguf LLAMA_SERVER OUT_DIR [ROUNDS] [CONCS] [C16]
# CONCS=none skips steps 1 and 2 (only the interleaved rounds of step 3).
set -euo pipefail
model="$1"; llama_server="$2"; out="$3"; rounds="${4:-3}"; concs="${5:-1,4,16,64}"; c16="${6:-16}"
shared=512; input=64; output=128
pagoda="$(cd "$(dirname "$0")/.." && pwd)/build/pagoda"
mkdir -p "$out"
port_p=8100; port_l=8101
wait_ready() { for _ in $(seq 600); do curl -sf "$1/health" >/dev/null && return 0; sleep 0.1; done; return 1; }
nprompts="${PAGODA_NUM_PROMPTS:-128}"
# The synthetic model's output is random tokens; the byte-fallback tokens (ids 3..258 of the llama vocabulary) make
# invalid UTF-8, which llama-server's output parser rejects mid-request. Both servers get the same logit_bias that
# bans them, so every request completes on both (the bias costs nothing measurable).
extra=$(awk 'BEGIN {printf "{\"logit_bias\": {"; for (i = 3; i <= 258; i++) printf "%s\"%d\": -100", (i > 3 ? ", " : ""), i; printf "}}"}')
bench() {  # URL NAME CONCS PLOT OUT
  local n="$nprompts"
  "$pagoda" bench serve --base-url "$1" --model "$2" --concurrency "$3" --num-prompts "$n" --input-len "$input" \
    --output-len "$output" --shared-prefix-len "$shared" --vocab-size 32000 --seed 1 --extra-body "$extra" --format json ${4:+--plot "$4"} >"$5"
}
start_pagoda() {
  "$pagoda" serve "$model" --port "$port_p" -t 2 --kv-cache-mem 4GiB --served-model-name m "$@" 2>"$out/pagoda_serve.log" &
  pid_p=$!; wait_ready "http://127.0.0.1:$port_p"
}
stop() { kill -TERM "$1"; wait "$1" || true; }

if [ "$concs" != none ]; then
echo "== pagoda, prefix caching on, concurrency $concs"
start_pagoda
bench "http://127.0.0.1:$port_p" m "$concs" "$out/pagoda_cached.svg" "$out/pagoda_cached.json"
jq -c ".runs[] | {concurrency, output_throughput, ttft_p99: .ttft_ms.p99, failed}" "$out/pagoda_cached.json"
stop "$pid_p"
echo "== pagoda, prefix caching off"
start_pagoda --no-enable-prefix-caching
bench "http://127.0.0.1:$port_p" m "$concs" "$out/pagoda_uncached.svg" "$out/pagoda_uncached.json"
jq -c ".runs[] | {concurrency, output_throughput, ttft_p99: .ttft_ms.p99, failed}" "$out/pagoda_uncached.json"
stop "$pid_p"
fi

echo "== concurrency $c16: pagoda vs llama-server, $rounds interleaved rounds"
for r in $(seq "$rounds"); do
  start_pagoda
  bench "http://127.0.0.1:$port_p" m "$c16" "" "$out/round${r}_pagoda.json"
  stop "$pid_p"
  "$llama_server" -m "$model" --port "$port_l" -t 2 -np "$c16" -c $(( c16 * (shared + input + output + 16) )) \
    --cont-batching --cache-prompt >"$out/llama_server.log" 2>&1 &
  pid_l=$!; wait_ready "http://127.0.0.1:$port_l"
  bench "http://127.0.0.1:$port_l" m "$c16" "" "$out/round${r}_llama.json"
  stop "$pid_l"
  echo "round $r: pagoda $(jq -c '[.runs[0].output_throughput, .runs[0].failed]' "$out/round${r}_pagoda.json")," \
       "llama-server $(jq -c '[.runs[0].output_throughput, .runs[0].failed]' "$out/round${r}_llama.json") (tok/s, failed)"
done
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
mp=$(for r in $(seq "$rounds"); do jq .runs[0].output_throughput "$out/round${r}_pagoda.json"; done | median)
ml=$(for r in $(seq "$rounds"); do jq .runs[0].output_throughput "$out/round${r}_llama.json"; done | median)
awk -v a="$mp" -v b="$ml" 'BEGIN {printf "median output tok/s: pagoda %.1f, llama-server %.1f, ratio %.2f\n", a, b, a/b}'
