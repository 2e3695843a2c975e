#!/usr/bin/env bash
# The GPU check of the forward pass (--device cuda), run on a lent GPU machine over what
# scripts/cuda/pack_for_device.sh packed: the forward tests (goldens, CPU agreement, Gate 0), `pagoda run` on both
# devices, then the speed of a 1B-class synthetic Llama (F16): single-stream decode and 64-way batched decode.
# Usage: bash scripts/cuda/device_forward_check.sh OUT_DIR
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${1:?usage: device_forward_check.sh OUT_DIR}"
mkdir -p "$out"
mkdir -p /tmp/cuda-carry && tar -C /tmp/cuda-carry -xJf .cuda-carry/lib.tar.xz
export LD_LIBRARY_PATH="/tmp/cuda-carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The binaries read ../shared as the build machine's checkout saw it (/work/main/../shared).
mkdir -p /work/main && ln -sfn "$PWD/.cuda-carry/shared" /work/shared
p=.cuda-carry/pagoda
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
status=0
.cuda-carry/pagoda_cuda_forward_tests 2>&1 | tee "$out/forward_tests.log" | grep -E "^\[  (FAILED|PASSED|SKIPPED) |^\[ RUN|largest|Gate 0|Failure|error" | grep -v "^\[ RUN"
status=${PIPESTATUS[0]}
echo "forward tests: exit $status"
for d in cpu cuda; do
  echo "--- pagoda run --device $d"
  $p run /work/shared/models/stories260K.gguf -p "Once upon a time" -n 40 --temp 0 --device $d --kv-cache-dtype f32 2>&1
done
# 1B-class synthetic Llama, F16: hidden 2048, 16 layers, 32/8 heads, FFN 8192, the 32,000-token SentencePiece vocab.
t0=$(date +%s)
$p synth --dim 2048 --layers 16 --heads 32 --kv-heads 8 --ffn 8192 --context 4096 --dtype f16 --seed 1 \
  --vocab-from /work/shared/vocab/ggml-vocab-llama-spm.gguf -o /tmp/synth-1b-f16.gguf >/dev/null
echo "synth: $(( $(date +%s) - t0 )) s, $(du -h /tmp/synth-1b-f16.gguf | cut -f1)"
$p bench /tmp/synth-1b-f16.gguf -p 512 -n 128 -r 3 --device cuda --format json 2>&1 | tee "$out/bench_single.json"
$p bench /tmp/synth-1b-f16.gguf -p 128 -n 64 -r 3 --concurrency 64 --device cuda --format json 2>&1 |
  tee "$out/bench_batched64.json"
exit $status
