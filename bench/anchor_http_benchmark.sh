#!/bin/bash
# The anchor benchmark through HTTP (docs/anchor-benchmark.md, section 4.10): the serving cells against a running
# `pagoda serve`, and the peer, llama-server with the anchor text as a cached prompt prefix (cache_prompt), in the
# same run, interleaved. Each run writes JSON lines into OUT_DIR; bench/anchor_tables.py turns them into tables.
# Usage: bench/anchor_http_benchmark.sh PAGODA LLAMA_SERVER SYNTH_134M_32K.gguf OUT_DIR
# LLAMA_SERVER: llama.cpp's server built from the goldens' commit (da46e59), e.g.
#   cmake -S llama.cpp -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
#     -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF && ninja -C build llama-server
set -euo pipefail
pagoda=$1 llama_server=$2 model=$3 out=$4
threads=${THREADS:-2}
mkdir -p "$out"
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# An operator key and a trust root naming it, for the anchor mode (registered and pinned through the admin API).
"$pagoda" anchor keygen -o "$work/op" >/dev/null
"$pagoda" anchor root --role "root=$work/op.pub" --role "anchor=$work/op.pub" --role "revocation=$work/op.pub" \
  --version 1 --expires +1d -o "$work/root.json"

wait_for() {  # URL LOG
  for _ in $(seq 600); do
    curl -sf "$1/v1/models" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "no server at $1: $(tail -n 5 "$2")" >&2
  return 1
}
# pagoda: 512 MiB of F16 KV (14,560 tokens of this model: 16 x (512 + 256 + 32) fit without sharing; the
# text-cached-evicted flush fills it before every wave), anchors may pin half of it.
"$pagoda" serve "$model" --port 18180 -t "$threads" --anchor-trust-root "$work/root.json" --admin-api-key adm \
  --anchor-max-pinned-frac 0.5 --kv-cache-mem 512MiB 2>"$out/pagoda-serve.log" &
pids+=($!)
# llama-server: one slot of 2,048 tokens for C = 1; 16 slots of 1,024 for C = 16 (F16 KV, its default).
"$llama_server" -m "$model" --port 18181 -t "$threads" -tb "$threads" -np 1 -c 2048 >"$out/llama-server-1.log" 2>&1 &
pids+=($!)
"$llama_server" -m "$model" --port 18182 -t "$threads" -tb "$threads" -np 16 -c 16384 >"$out/llama-server-16.log" 2>&1 &
pids+=($!)
wait_for http://127.0.0.1:18180 "$out/pagoda-serve.log"
wait_for http://127.0.0.1:18181 "$out/llama-server-1.log"
wait_for http://127.0.0.1:18182 "$out/llama-server-16.log"

run() { local file=$1; shift; "$pagoda" bench anchors "$model" "$@" --capacity-blocks 0 --format json 2>>"$out/$file.log" >>"$out/$file"; }
pagoda_url=(--base-url http://127.0.0.1:18180 --admin-api-key adm --anchor-key "$work/op.key")

# TTFT at one request at a time: a 512-token anchor, 32 or 512 own tokens; two interleaved rounds.
for round in 1 2; do
  run ttft.jsonl "${pagoda_url[@]}" --modes none,text,text-cached,anchor --anchor-lengths 512 --contexts 32,512 \
    --concurrency 1 --gen 16 --waves 3
  run ttft.jsonl --peer-url http://127.0.0.1:18181 --modes peer --anchor-lengths 512 --contexts 32,512 \
    --concurrency 1 --gen 16 --waves 3
done
# Sixteen at once: a 512-token anchor, 256 own tokens, 32 generated; two interleaved rounds.
for round in 1 2; do
  run c16.jsonl "${pagoda_url[@]}" --modes none,text,text-cached,anchor --anchor-lengths 512 --contexts 256 \
    --concurrency 16 --gen 32 --waves 2
  run c16.jsonl --peer-url http://127.0.0.1:18182 --modes peer --anchor-lengths 512 --contexts 256 \
    --concurrency 16 --gen 32 --waves 2
done
