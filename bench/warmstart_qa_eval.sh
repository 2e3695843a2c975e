#!/usr/bin/env bash
# The warm-start report's task-quality numbers (docs/warm-start.md §5.6-5.8): question-answer data whose next token
# is the answer (qa_data.h), every projector form fitted on the training templates, then the evaluation on the test
# templates twice: with the library holding near misses and unrelated prompts beside the true sources, and with the
# true sources alone. Run for SmolLM2-135M-Instruct and stories260K.
# Usage: bench/warmstart_qa_eval.sh PAGODA_BINARY SHARED_DIR SMOLLM2_GGUF OUT_DIR [INSTANCES] [REPEATS]
set -euo pipefail
pagoda="$(realpath "$1")"
shared="$(realpath "$2")"
smollm2="$(realpath "$3")"
out="$4"
instances="${5:-10}"
repeats="${6:-3}"
mkdir -p "$out"
run_model() {  # name model-path
  local name="$1" model="$2" maps=()
  "$pagoda" warmstart data --task qa -o "$out/$name/data" --instances "$instances"
  for form in shared block-diagonal slot-mixing target-aware; do
    "$pagoda" warmstart fit "$model" --prompts "$out/$name/data/train-prompts.jsonl" \
      --pairs "$out/$name/data/train-pairs.jsonl" --form "$form" -o "$out/$name/$form.safetensors" -t 2 \
      >"$out/$name/fit-$form.json"
    maps+=(--maps "$out/$name/$form.safetensors")
  done
  for distractors in all none; do
    "$pagoda" warmstart eval "$model" "${maps[@]}" --task qa --distractors "$distractors" --instances "$instances" \
      --repeats "$repeats" -t 2 --out "$out/$name/eval-$distractors" | tee "$out/$name/eval-$distractors.txt"
  done
}
run_model smollm2 "$smollm2"
run_model stories260K "$shared/models/stories260K.gguf"
