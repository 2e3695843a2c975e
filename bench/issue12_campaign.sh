#!/usr/bin/env bash
# Every row of issue #12's target table, on AVX-512 and on forced AVX2, against llama.cpp built natively and
# AVX2-only; logs go to OUT_DIR (one file per row). Run on a quiet machine: about 75 minutes on 2 cores.
# Usage: bench/issue12_campaign.sh MODELS_DIR LLAMA_CPP_DIR OUT_DIR
#   MODELS_DIR holds synth134m-{f16,q8_0,q4_k_m,q4_0}.gguf and synth1b-{f16,q8_0,q4_k_m,q4_0}.gguf (pagoda synth,
#   docs/PERFORMANCE.md); LLAMA_CPP_DIR has build/bin (native) and build-avx2/bin (AVX2-only) with llama-bench,
#   llama-batched-bench and llama-server.
set -uo pipefail
cd "$(dirname "$0")/.."
B="$1"; L="$2"; C="$3"
mkdir -p "$C"
llama_bin() { [ "$1" = avx2 ] && echo "$L/build-avx2/bin" || echo "$L/build/bin"; }
step() { echo "=== $(date +%T) $*" | tee -a "$C/progress.log"; }
models="134m-f16 134m-q8_0 134m-q4_k_m 134m-q4_0 1b-q4_k_m 1b-q4_0 1b-q8_0 1b-f16"
# Single stream: prefill pp512 and decode tg128, 3 interleaved rounds.
for m in $models; do
  reps=5; case $m in 1b-*) reps=2;; esac
  for isa in avx512 avx2; do
    step "single stream $m $isa"
    PAGODA_ISA=$isa REPS=$reps bench/compare_llama_cpp.sh "$B/synth$m.gguf" "$(llama_bin $isa)/llama-bench" 3 2 512 128 \
      > "$C/A-$m-$isa.log" 2>&1
  done
done
# Decode roofline (pagoda alone).
for m in $models; do
  for isa in avx512 avx2; do
    step "roofline $m $isa"
    PAGODA_ISA=$isa build/pagoda bench "$B/synth$m.gguf" -p 1 -n 128 -r 3 -t 2 --format json > "$C/B-$m-$isa.json" 2> "$C/B-$m-$isa.err"
  done
done
# 16-way batched decode.
for isa in avx512 avx2; do
  for m in 134m-f16 1b-q4_k_m; do
    step "16-way $m $isa"
    PAGODA_ISA=$isa bench/compare_batched.sh "$B/synth$m.gguf" "$(llama_bin $isa)/llama-batched-bench" 2 16 128 64 \
      > "$C/C-$m-$isa.log" 2>&1
  done
done
# Decode at 4k context and peak RSS (1B Q4_K_M), llama.cpp with flash attention off and on.
for isa in avx512 avx2; do
  for r in 1 2; do
    step "4k context $isa round $r"
    PAGODA_ISA=$isa /usr/bin/time -v build/pagoda bench "$B/synth1b-q4_k_m.gguf" -p 4096 -n 32 -r 1 -t 2 --no-roofline \
      --format json > "$C/D-pagoda-$isa-$r.json" 2> "$C/D-pagoda-$isa-$r.time"
    for fa in 0 1; do
      /usr/bin/time -v "$(llama_bin $isa)/llama-bench" -m "$B/synth1b-q4_k_m.gguf" -p 0 -n 32 -d 4096 -fa $fa -r 1 -t 2 \
        -o jsonl > "$C/D-llama-$isa-fa$fa-$r.jsonl" 2> "$C/D-llama-$isa-fa$fa-$r.time"
    done
  done
done
# Serving at concurrency 16 with a 512-token shared prefix (134M F16).
for isa in avx512 avx2; do
  step "serving $isa"
  PAGODA_ISA=$isa bench/compare_serve.sh "$B/synth134m-f16.gguf" "$(llama_bin $isa)/llama-server" "$C/E-$isa" 2 none 16 \
    > "$C/E-$isa.log" 2>&1
done
# Decode at 16k context (1B Q4_K_M). llama.cpp's 16k prompt takes minutes per run: FA_MODES picks its modes.
for isa in avx512 avx2; do
  step "16k context $isa pagoda"
  PAGODA_ISA=$isa /usr/bin/time -v build/pagoda bench "$B/synth1b-q4_k_m.gguf" -p 16352 -n 32 -r 1 -t 2 --no-roofline \
    --format json > "$C/F-pagoda-$isa.json" 2> "$C/F-pagoda-$isa.time"
  for fa in ${FA_MODES:-1 0}; do
    step "16k context $isa llama.cpp fa $fa"
    /usr/bin/time -v "$(llama_bin $isa)/llama-bench" -m "$B/synth1b-q4_k_m.gguf" -p 0 -n 32 -d 16352 -fa $fa -r 1 -t 2 \
      -o jsonl > "$C/F-llama-$isa-fa$fa.jsonl" 2> "$C/F-llama-$isa-fa$fa.time"
  done
done
step "done"
