#!/usr/bin/env bash
# The warm-start report's numbers (docs/warm-start.md): data, both projector forms fitted and evaluated on
# stories260K (fidelity, quality and timing), then timing on GPT-2-124M- and Pythia-160M-shaped synthetic models
# (random weights: their KL and quality numbers say nothing and are not reported).
# Usage: bench/warmstart_eval.sh PAGODA_BINARY SHARED_DIR OUT_DIR
set -euo pipefail
pagoda="$(realpath "$1")"
shared="$(realpath "$2")"
out="$3"
mkdir -p "$out"
"$pagoda" warmstart data -o "$out/data"
run_model() {  # name model-path instances repeats
  local name="$1" model="$2" instances="$3" repeats="$4"
  "$pagoda" warmstart data -o "$out/$name/data" --instances "$instances"
  for form in shared block-diagonal; do
    "$pagoda" warmstart fit "$model" --prompts "$out/$name/data/train-prompts.jsonl" \
      --pairs "$out/$name/data/train-pairs.jsonl" --form "$form" -o "$out/$name/$form.safetensors" -t 2 \
      >"$out/$name/fit-$form.json"
  done
  "$pagoda" warmstart eval "$model" --maps "$out/$name/shared.safetensors" --maps "$out/$name/block-diagonal.safetensors" \
    --instances "$instances" --repeats "$repeats" -t 2 --search-scaling --out "$out/$name/eval" | tee "$out/$name/eval.txt"
}
run_model stories260K "$shared/models/stories260K.gguf" 10 5
synth() {  # arch out-file context vocab
  [ -f "$2" ] || "$pagoda" synth --arch "$1" --dim 768 --layers 12 --heads 12 --kv-heads 12 --ffn 3072 --context "$3" \
    --vocab-from "$4" --dtype f16 --seed 1 -o "$2"
}
synth gpt2 "$out/gpt2-124m-shape.gguf" 1024 "$shared/models/arch/gpt2.gguf"
synth gptneox "$out/pythia-160m-shape.gguf" 2048 "$shared/models/arch/gptneox.gguf"
run_model gpt2-124m-shape "$out/gpt2-124m-shape.gguf" 4 3
run_model pythia-160m-shape "$out/pythia-160m-shape.gguf" 4 3
