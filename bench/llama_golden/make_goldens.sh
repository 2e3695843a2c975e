#!/usr/bin/env bash
# The exact commands that produced tests/golden/data/smollm2-135m-instruct-q4_1-greedy.jsonl: llama.cpp at the goldens'
# commit (da46e59, CPU build) runs bench/llama_golden/llama_golden.cpp (greedy steps with top-5 logits; 1 thread, F32 KV,
# flash attention off) over bench/llama_golden/smollm2_prompts.jsonl.
# Usage: bench/llama_golden/make_goldens.sh LLAMA_CPP_SOURCE MODEL.gguf OUT.jsonl [STEPS=64]
#   LLAMA_CPP_SOURCE: upstream da46e59's tree, e.g. exported from the snapshot of kainlan/llama.cpp-intel-optimizations:
#     git -C SNAPSHOT archive da46e59 -- . ':(exclude)models' | tar -x -C LLAMA_CPP_SOURCE
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="$(cd "$1" && pwd)" model="$2" out="$3" steps="${4:-64}"
build="$src/build"  # the CPU build that also gives llama-perplexity, llama-bench, llama-batched-bench, llama-server
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=ON -DBUILD_SHARED_LIBS=OFF >/dev/null
ninja -C "$build" llama >/dev/null
g++ -O2 -std=c++17 -o "$build/llama_golden" "$here/llama_golden.cpp" -I"$src/include" -I"$src/ggml/include" \
  -I"$src/vendor" "$build/src/libllama.a" -Wl,--start-group "$build"/ggml/src/libggml*.a -Wl,--end-group -fopenmp -lpthread
"$build/llama_golden" "$model" "$here/smollm2_prompts.jsonl" "$out" "$steps"
