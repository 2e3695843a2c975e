#!/bin/bash
# The runs behind docs/anchor-benchmark.md, in the order they were taken. Each writes JSON lines into OUT_DIR;
# bench/anchor_tables.py turns them into the report's tables.
# Usage: bench/anchor_benchmark.sh PAGODA SYNTH_134M_32K.gguf STORIES260K.gguf OUT_DIR
# SYNTH_134M_32K.gguf: pagoda synth --arch llama --dim 768 --layers 12 --heads 12 --kv-heads 12 --ffn 2048 \
#   --vocab-from ../shared/vocab/ggml-vocab-llama-spm.gguf --dtype f16 --seed 1 --context 32768 -o ...
set -euo pipefail
pagoda=$1 big=$2 small=$3 out=$4
mkdir -p "$out"
run() { local file=$1; shift; "$pagoda" bench anchors "$@" --format json 2>/dev/null >>"$out/$file"; }

# Decode overhead at equal total context (A = 64, C = 16): none with T = 576 against text and anchor with A = 64,
# T = 512; three interleaved rounds.
for round in 1 2 3; do
  run overhead.jsonl "$big" --modes none --contexts 576 --concurrency 16 --gen 128 --waves 2 --capacity-blocks 0
  run overhead.jsonl "$big" --modes text,anchor --anchor-lengths 64 --contexts 512 --concurrency 16 --gen 128 \
    --waves 2 --capacity-blocks 0
done
# TTFT with a 512-token anchor against the pasted text, by the request's own length; three interleaved rounds.
for round in 1 2 3; do
  run ttft.jsonl "$big" --modes text,text-cached,anchor --anchor-lengths 512 --contexts 32,128,512 --concurrency 1 \
    --gen 8 --waves 3 --capacity-blocks 0
done
# Saturation: concurrency doubled until TTFT p99 passes 10x its concurrency-1 value.
run saturation.jsonl "$big" --modes none,text,anchor --anchor-lengths 512 --contexts 512 --concurrency 1,2,4,8,16,sat \
  --gen 16 --waves 1 --capacity-blocks 0
# Longer contexts at concurrency 1.
run long.jsonl "$big" --modes none,text,text-cached,anchor --anchor-lengths 512 --contexts 4096,8192 --concurrency 1 \
  --gen 16 --waves 1 --capacity-blocks 0
# Capacity of a 1024-block pool.
run capacity.jsonl "$big" --skip-cells --anchor-lengths 8,32,128,512 --capacity-blocks 1024 --capacity-context 512 \
  --gen 64 --plot "$out/plots-capacity"
# The verification-cadence ablation, on both models.
for model in "$small" "$big"; do
  run cadence.jsonl "$model" --skip-cells --capacity-blocks 0 --cadence session,segment,block,token \
    --cadence-anchor-lengths 8,128,512 --cadence-concurrency 1,16 --contexts 128 --gen 64 --waves 2 \
    --plot "$out/plots-cadence-$(basename "$model" .gguf)"
done
# Functional metrics on the one trained model.
run functional.jsonl "$small" --skip-cells --capacity-blocks 0 --functional --facts 20 --revocations 100 \
  --drift-positions 64 --check
# The main grid, with plots.
run main.jsonl "$big" --modes none,text,text-cached,anchor,anchor-layers,rag --anchor-lengths 8,128,512 \
  --contexts 512 --concurrency 1,16 --waves 2 --gen 32 --capacity-blocks 0 --plot "$out/plots"
