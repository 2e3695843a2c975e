#!/bin/bash
# Structured-output cost when serving (docs/PERFORMANCE.md, "Structured outputs"): 16 concurrent streamed requests
# against `pagoda serve` and llama-server (the goldens' llama.cpp commit) on the same model, unconstrained and
# with the same 20-property JSON Schema (pagoda's json_schema field; llama-server converts the same field to its
# GBNF), interleaved rounds. Each (round, mode) has its own prompts, so no run finds its prompts in a prefix cache. Both servers get the same logit_bias banning byte tokens: llama-server ends a stream
# with an error when random weights stop inside a UTF-8 sequence.
# Usage: bench/grammar_serve_benchmark.sh PAGODA LLAMA_SERVER|none MODEL.gguf SCHEMA_BODY.json OUT_DIR [ROUNDS=3]
# (LLAMA_SERVER "none": pagoda alone). PAGODA_FLAGS: extra flags for `pagoda serve` (e.g. --no-parallel-masks).
set -euo pipefail
pagoda=$1 llama_server=$2 model=$3 schema_body=$4 out=$5 rounds=${6:-3}
threads=${THREADS:-2}
mkdir -p "$out"
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
"$pagoda" serve "$model" --port 18190 -t "$threads" --kv-cache-mem 1GiB ${PAGODA_FLAGS:-} 2>"$out/pagoda-serve.log" &
pids+=($!)
servers="pagoda"
if [ "$llama_server" != none ]; then
  "$llama_server" -m "$model" --port 18191 -t "$threads" -tb "$threads" -np 16 -c 16384 >"$out/llama-server.log" 2>&1 &
  pids+=($!)
  servers="pagoda llama-server"
fi
for port in 18190 $([ "$llama_server" != none ] && echo 18191); do
  for _ in $(seq 600); do curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1 && break; sleep 0.2; done
done
ban=$(python3 -c 'import json; print(json.dumps({str(i): -100 for i in range(3, 259)}))')
plain="{\"logit_bias\": $ban}"
constrained=$(python3 -c "import json,sys; b=json.load(open('$schema_body')); b['logit_bias']=json.loads('$ban'); print(json.dumps(b))")
name=$(basename "$model" .gguf)
for round in $(seq "$rounds"); do
  for server in $servers; do
    port=$([ "$server" = pagoda ] && echo 18190 || echo 18191)
    for mode in plain constrained; do
      body=$([ "$mode" = plain ] && echo "$plain" || echo "$constrained")
      "$pagoda" bench serve --base-url "http://127.0.0.1:$port" --model "$name" --concurrency 16 --num-prompts 32 \
        --input-len 128 --output-len 128 --vocab-size 32000 --seed "$([ "$mode" = plain ] && echo $((100 + round)) || echo $((200 + round)))" --extra-body "$body" --format json \
        2>>"$out/bench.log" | tail -n 1 | python3 -c "import json,sys; r=json.load(sys.stdin); r['server']='$server'; r['mode']='$mode'; r['round']=$round; print(json.dumps(r))" >>"$out/results.jsonl"
    done
  done
done
