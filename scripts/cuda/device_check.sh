#!/usr/bin/env bash
# The GPU check of the CUDA kernels, as one script for one call of a lent GPU machine (docs/kernels.md, "GPU paged
# attention"): builds the CUDA targets alone (-DPAGODA_CUDA_KERNELS_ONLY=ON: nvcc and CMake are all they need),
# runs their tests, then the bandwidth benchmark and PyTorch's SDPA on the same shapes.
# Usage: bash scripts/cuda/device_check.sh [OUT_DIR]   (OUT_DIR: logs and JSON; default build-cuda/out)
#   TUNE_BATCHES="4 16": also time benchmark builds with those rows in flight per thread (PAGODA_CUDA_KV_BATCH)
# If the build fails and .cuda-prebuilt/ holds binaries built elsewhere with the same nvcc, those run instead.
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${1:-build-cuda/out}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
nvcc --version | tail -2
bin=build-cuda
for b in ${TUNE_BATCHES:-}; do  # built beside the main tree, in the background
  (cmake -S . -B "build-cuda-b$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPAGODA_CUDA=ON -DPAGODA_CUDA_KERNELS_ONLY=ON \
     -DPAGODA_BUILD_TESTS=OFF "-DCMAKE_CUDA_FLAGS=-DPAGODA_CUDA_KV_BATCH=$b" >/dev/null 2>&1 &&
   cmake --build "build-cuda-b$b" --target pagoda_cuda_attention_bench -j 4 >"build-cuda-b$b.log" 2>&1) &
done
if ! { cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DPAGODA_CUDA=ON -DPAGODA_CUDA_KERNELS_ONLY=ON \
         >"$out/configure.log" 2>&1 && cmake --build build-cuda -j 16 >"$out/build.log" 2>&1; }; then
  echo "device_check: the build failed (tail of the log below)"; tail -30 "$out/build.log" "$out/configure.log"
  [ -x .cuda-prebuilt/pagoda_cuda_tests ] || exit 1
  echo "device_check: running the binaries of .cuda-prebuilt/ instead"; bin=.cuda-prebuilt
fi
grep -E "spill" "$out/build.log" | sort | uniq -c | sort -rn | head -3
status=0
"$bin/pagoda_cuda_tests" 2>&1 | tee "$out/tests.log" | grep -E "FAIL|checks|device" ; status=${PIPESTATUS[0]}
echo "tests: exit $status"
"$bin/pagoda_cuda_attention_bench" --json "$out/attention.jsonl" 2>&1
wait
for b in ${TUNE_BATCHES:-}; do
  echo "--- PAGODA_CUDA_KV_BATCH=$b"
  "build-cuda-b$b/pagoda_cuda_attention_bench" --json "$out/attention-b$b.jsonl" 2>&1 | tail -n +3
done
PYTHONUNBUFFERED=1 python3 bench/cuda_sdpa_torch.py --json "$out/sdpa.jsonl" 2>&1
exit $status
