#!/usr/bin/env bash
# Issue #28's speed table on SmolLM2-135M-Instruct Q4_1, on AVX-512 and forced AVX2 (PAGODA_ISA=avx2), against
# llama.cpp da46e59 built natively (build/bin) and AVX2-only (build-avx2/bin), each row interleaved round by round
# (bench/compare_*.sh; medians). Logs go to OUT_DIR, one file per row. Run on a quiet machine.
# Usage: bench/issue28_campaign.sh MODEL.gguf LLAMA_CPP_DIR OUT_DIR [ISAS="avx512 avx2"]
#   LLAMA_CPP_DIR/build*/bin hold llama-bench, llama-batched-bench and llama-server.
set -uo pipefail
cd "$(dirname "$0")/.."
M="$1"; L="$2"; C="$3"; isas="${4:-avx512 avx2}"
mkdir -p "$C"
llama_bin() { [ "$1" = avx2 ] && echo "$L/build-avx2/bin" || echo "$L/build/bin"; }
step() { echo "=== $(date +%T) $*" | tee -a "$C/progress.log"; }
for isa in $isas; do
  step "single stream pp512 / tg128, $isa"  # llama-bench: its defaults (F16 KV, flash attention auto)
  PAGODA_ISA=$isa REPS=5 bench/compare_llama_cpp.sh "$M" "$(llama_bin $isa)/llama-bench" 3 2 512 128 >"$C/A-$isa.log" 2>&1
  step "decode roofline, $isa"
  PAGODA_ISA=$isa build/pagoda bench "$M" -p 1 -n 128 -r 3 -t 2 --format json >"$C/B-$isa.json" 2>"$C/B-$isa.err"
  step "16 sequences pp128 + tg64, $isa"
  PAGODA_ISA=$isa bench/compare_batched.sh "$M" "$(llama_bin $isa)/llama-batched-bench" 3 16 128 64 >"$C/C-$isa.log" 2>&1
  if [ -x "$(llama_bin $isa)/llama-server" ]; then
    step "serve, concurrency 16, shared 512-token prefix, $isa"
    PAGODA_ISA=$isa bench/compare_serve.sh "$M" "$(llama_bin $isa)/llama-server" "$C/D-$isa" 3 none 16 >"$C/D-$isa.log" 2>&1
  fi
done
step done
