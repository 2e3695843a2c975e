#!/usr/bin/env bash
# Prefill/decode speed of pagoda and llama.cpp on the same model, same machine, same run, interleaved.
# usage: bench/compare_llama_cpp.sh MODEL.gguf LLAMA_BENCH_BINARY [ROUNDS=3] [THREADS=2] [P=128] [N=64]
# Each round runs `pagoda bench` (median of REPS reps, default 5) and `llama-bench` (mean of REPS reps) back to back;
# the table reports the median over rounds and pagoda / llama.cpp ratios.
set -euo pipefail
model="$1"
llama_bench="$2"
rounds="${3:-3}"
threads="${4:-2}"
p="${5:-128}"
n="${6:-64}"
reps="${REPS:-5}"
pagoda="$(dirname "$0")/../build/pagoda"
pp_pagoda=() tg_pagoda=() pp_llama=() tg_llama=()
for ((i = 1; i <= rounds; i++)); do
  # Prefill of p tokens, and decode of n tokens from a 1-token prompt (llama-bench's tg starts from an empty context;
  # decoding after the p-token prompt would charge pagoda p more keys of attention per step).
  line=$("$pagoda" bench "$model" -p "$p" -n 0 -t "$threads" -r "$reps" --no-roofline --format json 2>/dev/null | tail -n 1)
  pp_pagoda+=("$(echo "$line" | sed -E 's/.*"prefill_tok_s":([0-9.e+]+).*/\1/')")
  line=$("$pagoda" bench "$model" -p 1 -n "$n" -t "$threads" -r "$reps" --no-roofline --format json 2>/dev/null | tail -n 1)
  tg_pagoda+=("$(echo "$line" | sed -E 's/.*"decode_tok_s":([0-9.e+]+).*/\1/')")
  json=$("$llama_bench" -m "$model" -p "$p" -n "$n" -t "$threads" -r "$reps" -o jsonl 2>/dev/null)
  pp_llama+=("$(echo "$json" | grep "\"n_prompt\": $p" | sed -E 's/.*"avg_ts": ([0-9.e+]+).*/\1/')")
  tg_llama+=("$(echo "$json" | grep "\"n_gen\": $n" | grep '"n_prompt": 0' | sed -E 's/.*"avg_ts": ([0-9.e+]+).*/\1/')")
  echo "round $i: pagoda pp ${pp_pagoda[-1]} tg ${tg_pagoda[-1]} | llama.cpp pp ${pp_llama[-1]} tg ${tg_llama[-1]}" >&2
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
mpp=$(median "${pp_pagoda[@]}") mtg=$(median "${tg_pagoda[@]}") lpp=$(median "${pp_llama[@]}") ltg=$(median "${tg_llama[@]}")
printf '| metric | pagoda (tok/s) | llama.cpp (tok/s) | pagoda / llama.cpp |\n|---|---:|---:|---:|\n'
printf '| prefill pp%s | %.1f | %.1f | %.2f |\n' "$p" "$mpp" "$lpp" "$(echo "$mpp / $lpp" | bc -l)"
printf '| decode tg%s | %.1f | %.1f | %.2f |\n' "$n" "$mtg" "$ltg" "$(echo "$mtg / $ltg" | bc -l)"
