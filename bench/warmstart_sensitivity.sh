#!/usr/bin/env bash
# docs/warm-start.md §5.5 (post hoc sensitivity, not used for the verdict): the shared projector on stories260K's
# story data, fitted and evaluated with m = 4, 16, 32, 56 summary slots (gamma 0.01), then with gamma 1 and 100
# (m = 16); one timing per request (only KL and top-1 are read). The same data, fit and eval lines as
# bench/warmstart_eval.sh. Writes OUT/NAME/summary.json (and requests.jsonl) for each setting.
# Usage: bench/warmstart_sensitivity.sh PAGODA_BINARY SHARED_DIR OUT_DIR
set -euo pipefail
pagoda="$(realpath "$1")"
model="$(realpath "$2")/models/stories260K.gguf"
out="$3"
mkdir -p "$out"
"$pagoda" warmstart data -o "$out/data" --instances 10
run() {  # name, then the fit's extra flags
  local name="$1"
  shift
  "$pagoda" warmstart fit "$model" --prompts "$out/data/train-prompts.jsonl" --pairs "$out/data/train-pairs.jsonl" \
    --form shared -o "$out/$name.safetensors" -t 2 "$@" >"$out/fit-$name.json"
  "$pagoda" warmstart eval "$model" --maps "$out/$name.safetensors" --instances 10 --repeats 1 -t 2 \
    --out "$out/$name" >"$out/$name.txt"
}
run m4 -m 4
run m16
run m32 -m 32
run m56 -m 56
run gamma1 --gamma 1
run gamma100 --gamma 100
