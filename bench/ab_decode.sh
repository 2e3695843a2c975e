#!/bin/bash
# Decode A/B of pagoda binaries, interleaved round by round: tg128 after a 16-token prompt, 3 reps each, 2 threads.
# The binary run second in a round has measured faster on a Zen 5 VM whichever it was: run both orders.
# usage: bench/ab_decode.sh ROUNDS MODEL BIN... ; prints decode tok/s per round per binary
set -euo pipefail
R="$1"; M="$2"; shift 2
for r in $(seq "$R"); do
  for b in "$@"; do
    v=$("$b" bench "$M" -p 16 -n 128 -r 3 -t 2 --no-roofline 2>&1 | grep 'decode  tg' | awk '{print $3}')
    echo "$r $(basename "$b") $v"
  done
done
