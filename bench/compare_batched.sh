#!/usr/bin/env bash
# Aggregate decode of C concurrent sequences: pagoda bench --concurrency against llama.cpp's llama-batched-bench
# at the same shape, interleaved round by round; also pagoda's own single-stream decode. Prints per-round numbers
# and medians. llama-batched-bench runs the shape twice (-npl C,C) and the second, warm run counts.
# Usage: bench/compare_batched.sh MODEL.gguf LLAMA_BATCHED_BENCH [ROUNDS] [C] [P] [N]
set -euo pipefail
model="$1"; lbb="$2"; rounds="${3:-3}"; c="${4:-16}"; p="${5:-128}"; n="${6:-64}"
pagoda="$(dirname "$0")/../build/pagoda"
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
: >/tmp/cb_pagoda; : >/tmp/cb_pagoda_pp; : >/tmp/cb_llama; : >/tmp/cb_llama_pp; : >/tmp/cb_single
for r in $(seq "$rounds"); do
  j=$("$pagoda" bench "$model" --concurrency "$c" -p "$p" -n "$n" -r 1 -t 2 --format json)
  echo "$j" | sed -E 's/.*"decode_tok_s":([0-9.e+]+).*/\1/' >>/tmp/cb_pagoda
  echo "$j" | sed -E 's/.*"prefill_tok_s":([0-9.e+]+).*/\1/' >>/tmp/cb_pagoda_pp
  line=$("$lbb" -m "$model" -c $((c * (p + n) + 256)) -b 2048 -ub 512 -npp "$p" -ntg "$n" -npl "$c,$c" -t 2 2>/dev/null |
         grep -E "^\|\s+$p \|" | tail -1)
  echo "$line" | awk -F'|' '{gsub(/ /,"",$9); print $9}' >>/tmp/cb_llama
  echo "$line" | awk -F'|' '{gsub(/ /,"",$7); print $7}' >>/tmp/cb_llama_pp
  s=$("$pagoda" bench "$model" -p "$p" -n "$n" -r 1 -t 2 --format json)
  echo "$s" | sed -E 's/.*"decode_tok_s":([0-9.e+]+).*/\1/' >>/tmp/cb_single
  echo "round $r: pagoda C=$c decode $(tail -1 /tmp/cb_pagoda) prefill $(tail -1 /tmp/cb_pagoda_pp) |" \
       "llama-batched-bench decode $(tail -1 /tmp/cb_llama) prefill $(tail -1 /tmp/cb_llama_pp) |" \
       "pagoda single-stream decode $(tail -1 /tmp/cb_single)"
done
pd=$(median </tmp/cb_pagoda); pp=$(median </tmp/cb_pagoda_pp); ld=$(median </tmp/cb_llama); lp=$(median </tmp/cb_llama_pp)
sd=$(median </tmp/cb_single)
echo "median: pagoda decode $pd prefill $pp | llama.cpp decode $ld prefill $lp | single $sd"
awk -v a="$pd" -v b="$ld" -v s="$sd" -v x="$pp" -v y="$lp" \
  'BEGIN {printf "decode pagoda/llama.cpp %.2f, prefill %.2f, pagoda C-stream / single %.2f\n", a/b, x/y, a/s}'
