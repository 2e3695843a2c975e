#!/bin/bash
# Prefill, three interleaved rounds: pagoda before this session (pagoda_base = f13c27f) and after the prefill changes
# (pagoda_29 = 29bed42), and llama.cpp da46e59 (native build for avx512, AVX2-only build for avx2), pp = -p N -n 0.
S=/work/main/.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf; F=/tmp/synth134m-f16.gguf
for r in 1 2 3; do
 for isa in avx512 avx2; do
  L=/work/llama.cpp/build/bin; [ $isa = avx2 ] && L=/work/llama.cpp/build-avx2/bin
  for spec in "$S 512" "$S 2048" "$F 512"; do
   set -- $spec; m=$1; p=$2; name=$(basename $m .gguf | cut -c1-12)
   for b in base 29; do
     v=$(PAGODA_ISA=$isa /tmp/pagoda_$b bench $m -p $p -n 0 -r 1 -t 2 --no-roofline 2>&1 | grep prefill | awk '{print $3}')
     echo "round $r $isa $name pp$p pagoda_$b $v"
   done
   v=$(LD_LIBRARY_PATH=$L $L/llama-bench -m $m -p $p -n 0 -t 2 -r 1 2>&1 | grep "pp$p" | awk -F'|' '{print $(NF-1)}' | awk '{print $1}')
   echo "round $r $isa $name pp$p llama $v"
  done
 done
done
