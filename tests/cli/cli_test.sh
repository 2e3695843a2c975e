#!/usr/bin/env bash
# Drives the real binary: output formats, and bad input (missing/corrupt files, unsupported architecture,
# over-long prompts, invalid flag values) -> one clear error line on stderr, non-zero exit, no crash or hang.
set -u
pagoda="$1"
shared="$2"
model="$shared/models/stories260K.gguf"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/test_lib.sh"

# --- output formats
out=$(timeout 60 "$pagoda" run "$model" -p "Once upon a time" -n 16 --temp 0 --format json 2>/dev/null | tail -n 1)
run_json="$out"
if echo "$out" | grep -qE '^\{"prompt_ids":\[1,403,407,261,378\],"ids":\[432,383,286,261,'; then ok; else bad "run json: $out"; fi
echo "$out" | grep -q '"text":", there was a little girl named Lily' && ok || bad "run json text: $out"
text=$(timeout 60 "$pagoda" run "$model" -p "Once upon a time" -n 16 --temp 0 2>/dev/null)
echo "$text" | grep -q "Lily" && ok || bad "run text: $text"
# Text output echoes the prompt before the continuation (--no-echo leaves it out) and ends with a newline, so the
# statistics line on stderr starts a line of its own.
timeout 60 "$pagoda" run "$model" -p "Once upon a time" -n 16 --temp 0 >"$tmp/run.txt" 2>/dev/null
case "$(head -c 27 "$tmp/run.txt")" in "Once upon a time, there was") ok ;; *) bad "run echo: $(cat "$tmp/run.txt")" ;; esac
[ "$(tail -c 1 "$tmp/run.txt" | od -An -c | tr -d ' ')" = '\n' ] && ok || bad "run text lacks a final newline"
timeout 60 "$pagoda" run "$model" -p "Once upon a time" -n 16 --temp 0 --no-echo >"$tmp/run.txt" 2>/dev/null
case "$(head -c 11 "$tmp/run.txt")" in ", there was") ok ;; *) bad "run --no-echo: $(cat "$tmp/run.txt")" ;; esac
timeout 60 "$pagoda" run "$model" -p "Once upon a time" -n 4 --temp 0 >"$tmp/run.txt" 2>&1
[ "$(tail -n 1 "$tmp/run.txt" | cut -c 1-7)" = "pagoda:" ] && ok || bad "statistics line not on a line of its own"
a=$(timeout 60 "$pagoda" run "$model" -p "Once" -n 24 --temp 0.9 --seed 7 --format json 2>/dev/null | tail -n 1)
b=$(timeout 60 "$pagoda" run "$model" -p "Once" -n 24 --temp 0.9 --seed 7 --format json 2>/dev/null | tail -n 1)
[ -n "$a" ] && [ "$a" = "$b" ] && ok || bad "same seed, different output"
# The penalties reach run's sampler: greedy tokens change with them (stories260K repeats itself within 48 tokens).
p=$(timeout 60 "$pagoda" run "$model" -p "Once upon a time" -n 48 --temp 0 --repeat-penalty 1.3 --presence-penalty 0.5 \
  --frequency-penalty 0.5 --format json 2>/dev/null | tail -n 1)
g=$(timeout 60 "$pagoda" run "$model" -p "Once upon a time" -n 48 --temp 0 --format json 2>/dev/null | tail -n 1)
echo "$p" | grep -q '"ids":\[' && [ "$p" != "$g" ] && ok || bad "penalties change nothing: $p"
tok=$(timeout 60 "$pagoda" tokenize "$shared/vocab/ggml-vocab-llama-spm.gguf" -p "Hello world" --no-special --format json | tail -n 1)
[ "$tok" = '{"ids":[15043,3186]}' ] && ok || bad "tokenize: $tok"
tok=$(timeout 60 "$pagoda" tokenize "$shared/vocab/ggml-vocab-llama-spm.gguf" -p "Hello world" --format json | tail -n 1)
[ "$tok" = '{"ids":[1,15043,3186]}' ] && ok || bad "tokenize with BOS: $tok"
timeout 60 "$pagoda" inspect "$model" >"$tmp/inspect" 2>&1 && grep -q "n_head_kv=4" "$tmp/inspect" && grep -q "blk.4.ffn_down.weight" "$tmp/inspect" && ok || bad "inspect"
timeout 120 "$pagoda" synth --arch llama --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 \
  --vocab-from "$shared/vocab/ggml-vocab-llama-spm.gguf" --dtype q8_0 --seed 1 -o "$tmp/synth.gguf" 2>/dev/null && ok || bad "synth"
bench=$(timeout 120 "$pagoda" bench "$tmp/synth.gguf" -p 16 -n 4 -r 1 --format json 2>/dev/null | tail -n 1)
echo "$bench" | grep -qE '"decode_tok_s":[0-9]' && echo "$bench" | grep -qE '"prefill_tok_s":[0-9]' && ok || bad "bench json: $bench"
timeout 60 "$pagoda" run "$tmp/synth.gguf" -p "Hello" -n 4 --temp 0 --format json >/dev/null 2>&1 && ok || bad "run on synth q8_0"
# GPT-2 and GPT-NeoX (Pythia) shapes: learned positions / partial rotary, fused QKV, LayerNorm; they load and run.
for arch in gpt2 gptneox; do
  timeout 120 "$pagoda" synth --arch $arch --dim 64 --layers 2 --heads 4 --kv-heads 4 --ffn 128 \
    --vocab-from "$shared/vocab/ggml-vocab-llama-spm.gguf" --dtype f16 --seed 1 -o "$tmp/synth-$arch.gguf" 2>/dev/null \
    && timeout 60 "$pagoda" inspect "$tmp/synth-$arch.gguf" 2>/dev/null | grep -q "architecture: $arch" \
    && timeout 60 "$pagoda" run "$tmp/synth-$arch.gguf" -p "Hello" -n 4 --temp 0 --format json >/dev/null 2>&1 \
    && ok || bad "synth $arch"
done
expect_error "gpt2 needs kv-heads = heads" "must equal --heads" -- synth --arch gpt2 --dim 64 --layers 1 --heads 4 --kv-heads 2 --ffn 64 --vocab-from "$shared/vocab/ggml-vocab-llama-spm.gguf" -o "$tmp/x.gguf"

# --- KV cache types: the greedy story is the same in every type that stories260K can store (f16 is the default).
for dtype in f32 f16 bf16; do
  out=$(timeout 60 "$pagoda" run "$model" -p "Once upon a time" -n 16 --temp 0 --format json --kv-cache-dtype $dtype 2>/dev/null | tail -n 1)
  echo "$out" | grep -q '"text":", there was a little girl named Lily' && ok || bad "run --kv-cache-dtype $dtype: $out"
done
# --- run --chat: a message through the chat template (stories260K has none: built-in chatml), one turn per stdin line
out=$(timeout 60 "$pagoda" run "$model" --chat -p "Once upon a time" -n 8 --temp 0 --format json 2>/dev/null | tail -n 1)
echo "$out" | python3 -c 'import json,sys; t=json.load(sys.stdin); assert t["reused"]==0 and len(t["ids"])==8 and t["text"]' \
  && ok || bad "run --chat -p json: $out"
printf 'Once upon a time\n\nthere was a cat\n' | timeout 60 "$pagoda" run "$model" --chat -n 8 --temp 0 --format json \
  >"$tmp/chat.jsonl" 2>"$tmp/chat.err"
python3 - "$tmp/chat.jsonl" <<'PY' && ok || bad "run --chat on stdin: $(cat "$tmp/chat.jsonl" "$tmp/chat.err")"
import json, sys
turns = [json.loads(l) for l in open(sys.argv[1])]
assert len(turns) == 2, turns  # the empty line is no turn
first, second = turns
assert second["prompt_ids"][:len(first["prompt_ids"])] == first["prompt_ids"]
assert len(first["prompt_ids"]) <= second["reused"] < len(second["prompt_ids"]), second
PY
[ "$(grep -c "kept from the last turn" "$tmp/chat.err")" = 2 ] && ok || bad "run --chat statistics: $(cat "$tmp/chat.err")"
printf 'Once upon a time\n' | timeout 60 "$pagoda" run "$model" --chat -n 8 --temp 0 >"$tmp/chat.txt" 2>/dev/null
[ "$(wc -l <"$tmp/chat.txt")" = 1 ] && ! grep -q "im_start\|Once upon" "$tmp/chat.txt" && ok || bad "run --chat text: $(cat "$tmp/chat.txt")"
# A reply that runs to the context's end (no -n) gets a hint about loops and the flags against them; not when -n caps it.
timeout 60 "$pagoda" run "$model" --chat -p "Once upon a time" -c 64 --temp 0 >/dev/null 2>"$tmp/loop.err"
grep -q "never ended its turn.*--repeat-penalty 1.1" "$tmp/loop.err" && ok || bad "no loop hint: $(cat "$tmp/loop.err")"
timeout 60 "$pagoda" run "$model" --chat -p "Once upon a time" -c 64 -n 8 --temp 0 >/dev/null 2>"$tmp/loop.err"
! grep -q "never ended its turn" "$tmp/loop.err" && ok || bad "loop hint despite -n: $(cat "$tmp/loop.err")"
# A stdin turn too long for the context is reported; the conversation goes on, and the exit status says it.
{ printf 'Once upon a time\n'; for i in $(seq 60); do printf 'a dog ran. '; done; printf '\nthere was a cat\n'; } |
  timeout 60 "$pagoda" run "$model" --chat -c 100 -n 8 --temp 0 --format json >"$tmp/chat.jsonl" 2>"$tmp/chat.err"
rc=$?
[ $rc -eq 1 ] && [ "$(wc -l <"$tmp/chat.jsonl")" = 2 ] && [ "$(grep -c "error:.*more than the context size of 100" "$tmp/chat.err")" = 1 ] \
  && ok || bad "run --chat, a turn too long: rc $rc, $(cat "$tmp/chat.jsonl" "$tmp/chat.err")"
timeout 60 "$pagoda" run "$model" --chat -n 8 </dev/null >"$tmp/out" 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "no message on stdin" "$tmp/err" && ok || bad "run --chat, empty stdin: $(cat "$tmp/err")"
expect_error "run without a prompt" "prompt is required.*--chat" -- run "$model"
expect_error "--system without --chat" "--system needs --chat" -- run "$model" -p hi --system "Be brief."
expect_error "--chat-template without --chat" "need --chat" -- run "$model" -p hi --chat-template chatml
expect_error "--chat with --no-echo" "excludes" -- run "$model" -p hi --chat --no-echo
expect_error "--chat, empty message" "message \(-p\) is empty" -- run "$model" -p "" --chat
expect_error "q8_0 KV on head size 8" "multiple of 32.*8" -- run "$model" -p hi --kv-cache-dtype q8_0
expect_error "unknown KV type" "kv-cache-dtype" -- run "$model" -p hi --kv-cache-dtype q4_0
expect_error "unknown device" "device" -- run "$model" -p hi --device tpu
if "$pagoda" version | grep -qx "devices: cpu (--device)"; then  # a build without CUDA says how to get it, and stops
  expect_error "--device cuda without CUDA (run)" "PAGODA_CUDA=ON" -- run "$model" -p hi --device cuda
  expect_error "--device cuda without CUDA (batch)" "PAGODA_CUDA=ON" -- batch "$model" --input /dev/null --output /dev/null --device cuda
fi
expect_error "unknown KV type (batch)" "kv-cache-dtype" -- batch "$model" --input /dev/null --output /dev/null --kv-cache-dtype f8
synth_q="$shared/models/quant/synth-q-Q4_K_M.gguf"
timeout 60 "$pagoda" run "$synth_q" -p "Hello" -n 8 --temp 0 --kv-cache-dtype q8_0 --format json >/dev/null 2>&1 && ok || bad "run q8_0 KV"
bench=$(timeout 120 "$pagoda" bench "$synth_q" -p 16 -n 4 -r 1 --kv-cache-dtype bf16 --format json 2>/dev/null | tail -n 1)
echo "$bench" | grep -q '"kv_cache_dtype":"bf16"' && ok || bad "bench --kv-cache-dtype: $bench"
echo "$bench" | grep -qE '"decode_bytes_per_token":[0-9]+,"decode_ops_per_token":[0-9.e+]+,.*"read_bandwidth_gb_s":[0-9.e+]+,"bandwidth_bound_tok_s":[0-9.e+]+,"compute_bound_tok_s":[0-9.e+]+,"roofline_limit":"(bandwidth|compute)","decode_of_bandwidth_bound":[0-9.e+-]+,"decode_of_compute_bound":[0-9.e+-]+,"decode_of_roofline":[0-9.e+-]+' && ok || bad "bench roofline: $bench"
bench=$(timeout 120 "$pagoda" bench "$synth_q" --concurrency 2 -p 16 -n 4 -r 1 --kv-cache-dtype q8_0 --format json 2>/dev/null | tail -n 1)
echo "$bench" | grep -qE '"decode_tok_s":[0-9]' && ok || bad "bench --concurrency --kv-cache-dtype q8_0: $bench"

# --- bad input
expect_error "missing model" "cannot open '/nonexistent.gguf'" -- run /nonexistent.gguf -p hi
head -c 5000 "$model" >"$tmp/truncated.gguf"
expect_error "truncated model" "extends past the end of the file|truncated" -- run "$tmp/truncated.gguf" -p hi
head -c 100 /dev/urandom >"$tmp/noise.gguf"
expect_error "random bytes" "not a GGUF file" -- run "$tmp/noise.gguf" -p hi
: >"$tmp/empty.gguf"
expect_error "empty file" "too small" -- inspect "$tmp/empty.gguf"
expect_error "directory without a model" "config.json. is missing .a model folder needs config.json" -- run "$tmp" -p hi
# A GGUF of an architecture pagoda does not run: the gpt-2 vocabulary file with its architecture renamed to "bert".
perl -0777 -pe 's/\x04\x00{7}gpt2/\x04\x00\x00\x00\x00\x00\x00\x00bert/g' "$shared/vocab/ggml-vocab-gpt-2.gguf" >"$tmp/bert.gguf"
expect_error "unsupported architecture" "unsupported architecture 'bert' \\(supported: llama, qwen2" -- run "$tmp/bert.gguf" -p hi
expect_error "weights missing" "tensor 'token_embd.weight' is missing" -- run "$shared/vocab/ggml-vocab-gpt-2.gguf" -p hi
long=$(printf 'word %.0s' $(seq 1 100))
expect_error "prompt longer than context" "more than the context size of 16" -- run "$model" -p "$long" -c 16
expect_error "context beyond the model's" "exceeds the model's training context of" -- run "$model" -p hi -c 100000
expect_error "negative seed" "seed" -- run "$model" -p hi --seed -1
expect_error "seed overflow" "seed" -- run "$model" -p hi --seed 18446744073709551616
mkfifo "$tmp/fifo"
expect_error "fifo as model" "not a regular file" -- inspect "$tmp/fifo"
expect_error "negative temperature" "temp" -- run "$model" -p hi --temp -1
expect_error "NaN temperature" "not a number|out of range" -- run "$model" -p hi --temp nan
expect_error "non-numeric -n" "n-predict|-n" -- run "$model" -p hi -n abc
expect_error "negative -n" "n-predict|-n" -- run "$model" -p hi -n -5
expect_error "top-p above 1" "top-p" -- run "$model" -p hi --top-p 2
expect_error "min-p above 1" "min-p" -- run "$model" -p hi --min-p 1.5
expect_error "zero repeat penalty" "repeat-penalty must be > 0" -- run "$model" -p hi --repeat-penalty 0
expect_error "presence penalty out of range" "presence-penalty" -- run "$model" -p hi --presence-penalty 3
expect_error "frequency penalty not a number" "frequency-penalty" -- run "$model" -p hi --frequency-penalty x
expect_error "bad format" "format" -- run "$model" -p hi --format xml
expect_error "unknown flag" "--bogus" -- run "$model" -p hi --bogus
expect_error "missing prompt" "prompt" -- run "$model"
expect_error "no subcommand" "subcommand" --
expect_error "bad dtype" "dtype 'q3' is not one of" -- synth --dim 64 --layers 1 --heads 4 --ffn 64 --vocab-from "$shared/vocab/ggml-vocab-llama-spm.gguf" --dtype q3 -o "$tmp/x.gguf"
# Quantized synthetic models: every preset synth writes loads and generates (dim and ffn multiples of 256).
for dtype in q4_0 q4_1 q5_0 q5_1 q8_0 q2_k q3_k_s q3_k_m q3_k_l q4_k_s q4_k_m q5_k_s q5_k_m q6_k iq4_nl iq4_xs q3_k q4_k q5_k; do
  timeout 120 "$pagoda" synth --arch llama --dim 256 --layers 1 --heads 4 --ffn 256 \
    --vocab-from "$shared/vocab/ggml-vocab-llama-spm.gguf" --dtype "$dtype" -o "$tmp/synth-$dtype.gguf" 2>/dev/null &&
    timeout 60 "$pagoda" run "$tmp/synth-$dtype.gguf" -p "Hello" -n 4 --temp 0 --format json >/dev/null 2>&1 &&
    ok || bad "synth --dtype $dtype, then run"
done
# Each preset picks the tensor types llama-quantize picked for ../shared/models/quant/synth-q-<PRESET>.gguf (the same
# shapes: hidden 256, 2 layers, 8 heads / 4 KV heads, FFN 512), and the same general.file_type.
types_of() { "$pagoda" inspect "$1" 2>/dev/null | awk '$1 ~ /weight$/ && $1 !~ /norm/ {print $1, $2}' | sort; }
file_type_of() { "$pagoda" inspect "$1" 2>/dev/null | grep -o 'general.file_type[^0-9]*[0-9]*' | head -1; }
for ref in "$shared"/models/quant/synth-q-*.gguf; do
  preset=$(basename "$ref" .gguf); preset=${preset#synth-q-}
  timeout 120 "$pagoda" synth --arch llama --dim 256 --layers 2 --heads 8 --kv-heads 4 --ffn 512 \
    --vocab-from "$shared/vocab/ggml-vocab-llama-spm.gguf" --dtype "$preset" -o "$tmp/mix.gguf" 2>/dev/null
  if [ -n "$(types_of "$tmp/mix.gguf")" ] && [ "$(types_of "$tmp/mix.gguf")" = "$(types_of "$ref")" ] &&
     [ -n "$(file_type_of "$tmp/mix.gguf")" ] && [ "$(file_type_of "$tmp/mix.gguf")" = "$(file_type_of "$ref")" ]; then
    ok
  else
    bad "$preset mix differs from llama-quantize's: $(diff <(types_of "$tmp/mix.gguf") <(types_of "$ref") | tr '\n' ' ') $(file_type_of "$tmp/mix.gguf") vs $(file_type_of "$ref")"
  fi
done
# Rows no K-quant block tiles fall back as llama-quantize's do (Q4_K -> Q5_0; output Q6_K -> Q8_0; ffn_down rows of
# 80 -> F16), and the model still runs.
timeout 120 "$pagoda" synth --dim 64 --layers 1 --heads 4 --ffn 80 --vocab-from "$shared/vocab/ggml-vocab-llama-spm.gguf" \
  --dtype q4_k_m -o "$tmp/fallback.gguf" 2>/dev/null &&
  [ "$(types_of "$tmp/fallback.gguf" | grep -E '^(blk.0.attn_q|blk.0.ffn_down|output).weight' | tr '\n' ' ')" = \
    "blk.0.attn_q.weight Q5_0 blk.0.ffn_down.weight F16 output.weight Q8_0 " ] &&
  timeout 60 "$pagoda" run "$tmp/fallback.gguf" -p "Hello" -n 4 --temp 0 --format json >/dev/null 2>&1 &&
  ok || bad "synth fallback types: $(types_of "$tmp/fallback.gguf" | tr '\n' ' ')"
expect_error "synth unwritable type" "dtype 'iq2_xxs' is not one of .*q4_k_m.*iq4_xs" -- synth --dim 256 --layers 1 --heads 4 --ffn 256 --vocab-from "$shared/vocab/ggml-vocab-llama-spm.gguf" --dtype iq2_xxs -o "$tmp/x.gguf"
expect_error "bad synth shape" "multiple of --heads" -- synth --dim 65 --layers 1 --heads 4 --ffn 64 --vocab-from "$shared/vocab/ggml-vocab-llama-spm.gguf" -o "$tmp/x.gguf"
expect_error "bench context" "exceeds the model's context" -- bench "$model" -p 100000 -n 1
expect_error "vocab-only model" "tensor 'token_embd.weight' is missing" -- run "$shared/vocab/ggml-vocab-llama-spm.gguf" -p hi

# --- batch
cat >"$tmp/req.jsonl" <<'JSONL'
{"id": "a", "prompt": "Once upon a time", "max_tokens": 8, "temperature": 0}
not json
{"id": 3, "prompt": "x", "temprature": 1}

{"id": "long", "prompt_ids": [1, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300, 300], "max_tokens": 2}
{"id": "b", "prompt": "Lily", "max_tokens": 4, "temperature": 0.7, "seed": 1, "n": 2, "stop": "zzz"}
JSONL
timeout 60 "$pagoda" batch "$model" --input "$tmp/req.jsonl" --output "$tmp/res.jsonl" --num-blocks 2 --block-size 16 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] && ok || bad "batch exit code $rc: $(cat "$tmp/err")"
[ "$(wc -l <"$tmp/res.jsonl")" -eq 5 ] && ok || bad "batch: $(wc -l <"$tmp/res.jsonl") result lines, want 5"
sed -n 1p "$tmp/res.jsonl" | grep -qE '^\{"id":"a","prompt_ids":\[1,403,407,261,378\],"ids":\[432,383,286,261,376,298,315,421\],"text":", there was a little girl[^"]*","finish_reason":"length"\}$' && ok || bad "batch line 1: $(sed -n 1p "$tmp/res.jsonl")"
sed -n 2p "$tmp/res.jsonl" | grep -q '"error":"line 2 is not valid JSON"' && ok || bad "batch line 2: $(sed -n 2p "$tmp/res.jsonl")"
sed -n 3p "$tmp/res.jsonl" | grep -q "unknown field 'temprature'" && ok || bad "batch line 3: $(sed -n 3p "$tmp/res.jsonl")"
sed -n 4p "$tmp/res.jsonl" | grep -q '"id":"long","error":".*KV pool' && ok || bad "batch line 4: $(sed -n 4p "$tmp/res.jsonl")"
sed -n 5p "$tmp/res.jsonl" | grep -q '"choices":\[{"index":0,' && ok || bad "batch line 5: $(sed -n 5p "$tmp/res.jsonl")"
grep -q '^pagoda: stats {"requests":5,"errors":3,"steps":[0-9]*,"preemptions":[0-9]*,"prefix_cache_query_tokens":[0-9]*,"prefix_cache_hit_tokens":[0-9]*,"peak_blocks_in_use":[0-9]*' "$tmp/err" && ok || bad "batch stats: $(cat "$tmp/err")"
# Structured outputs in batch lines: a choice, a JSON Schema (the text parses and fits it), an unsupported keyword.
cat >"$tmp/constrained.jsonl" <<'JSONL'
{"id": "choice", "prompt": "Once upon a time", "max_tokens": 16, "temperature": 0, "guided_choice": ["yes", "no", "maybe"]}
{"id": "schema", "prompt": "Once upon a time", "max_tokens": 64, "temperature": 0, "json_schema": {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 99}, "b": {"type": "boolean"}}, "required": ["a", "b"], "additionalProperties": false}}
{"id": "bad", "prompt": "x", "max_tokens": 4, "json_schema": {"type": "object", "not": {}}}
JSONL
timeout 60 "$pagoda" batch "$model" --input "$tmp/constrained.jsonl" --output "$tmp/constrained.out" 2>/dev/null &&
  python3 - "$tmp/constrained.out" <<'PY' && ok || bad "batch constrained lines: $(cat "$tmp/constrained.out")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert lines[0]["text"] in ("yes", "no", "maybe") and lines[0]["finish_reason"] == "stop", lines[0]
v = json.loads(lines[1]["text"])
assert set(v) == {"a", "b"} and isinstance(v["a"], int) and 0 <= v["a"] <= 99 and isinstance(v["b"], bool), v
assert "unsupported JSON Schema keyword 'not'" in lines[2]["error"], lines[2]
PY
expect_error "batch missing input" "cannot open --input file" -- batch "$model" --input "$tmp/nope.jsonl" --output "$tmp/o.jsonl"
expect_error "batch bad kv mem" "kv-cache-mem" -- batch "$model" --input "$tmp/req.jsonl" --output "$tmp/o.jsonl" --kv-cache-mem 12XB
expect_error "batch unwritable output" "cannot open --output file" -- batch "$model" --input "$tmp/req.jsonl" --output "$tmp/no/such/dir/o.jsonl"
expect_error "batch block size" "block-size" -- batch "$model" --input "$tmp/req.jsonl" --output "$tmp/o.jsonl" --block-size 0
expect_error "batch max-model-len" "training context" -- batch "$model" --input "$tmp/req.jsonl" --output "$tmp/o.jsonl" --max-model-len 999999

# --- bench through the engine
out=$(timeout 120 "$pagoda" bench "$model" --concurrency 4 -p 16 -n 8 -r 1 --format json 2>/dev/null)
echo "$out" | grep -qE '^\{"model":.*"concurrency":4,.*"prefill_tok_s":[0-9.e+]+,"decode_tok_s":[0-9.e+]+\}$' && ok || bad "bench --concurrency: $out"
out=$(timeout 120 "$pagoda" bench "$model" --concurrency 4 --shared-prefix 70 -p 8 -n 8 -r 1 --format json 2>/dev/null)
echo "$out" | grep -qE '"decode_tok_s":[0-9.e+]+,"shared_prefix_tokens":70\}$' && ok || bad "bench --shared-prefix: $out"
expect_error "shared prefix without concurrency" "concurrency" -- bench "$model" --shared-prefix 10
out=$(timeout 120 "$pagoda" bench "$model" --cached-prefix 32 -p 48 -r 1 --format json 2>/dev/null)
echo "$out" | grep -qE '"ttft_cold_ms":[0-9.e+-]+,"ttft_cached_ms":[0-9.e+-]+' && ok || bad "bench --cached-prefix: $out"
echo "$out" | grep -qE '"prefix_hit_tokens":[1-9]' && ok || bad "bench --cached-prefix had no prefix hits: $out"
expect_error "bench cached prefix too long" "cached-prefix" -- bench "$model" --cached-prefix 64 -p 32

# --- version and the kernel set
v=$(timeout 10 "$pagoda" --version 2>&1)
echo "$v" | grep -qE '^pagoda [0-9]+\.[0-9]+\.[0-9]+$' && echo "$v" | grep -q '^commit: ' && echo "$v" | grep -q '^build: ' &&
  echo "$v" | grep -qE '^kernels: (avx512|avx2|portable) ' && ok || bad "--version: $v"
[ "$(timeout 10 "$pagoda" version 2>&1)" = "$v" ] && ok || bad "version differs from --version"
PAGODA_ISA=portable timeout 10 "$pagoda" version | grep -qx 'kernels: portable (PAGODA_ISA)' && ok || bad "PAGODA_ISA not shown"
timeout 10 "$pagoda" inspect --system >"$tmp/system" 2>&1 && grep -q '^cpu flags: ' "$tmp/system" &&
  grep -q '^kernels: ' "$tmp/system" && ok || bad "inspect --system: $(cat "$tmp/system")"
PAGODA_ISA=sse9 expect_error "PAGODA_ISA unknown" "PAGODA_ISA='sse9' is not one of" -- version
PAGODA_ISA=sse9 timeout 10 "$pagoda" version >/dev/null 2>&1 && bad "PAGODA_ISA=sse9 accepted" || ok
# The portable kernels give the same greedy tokens as the default set.
p=$(PAGODA_ISA=portable timeout 60 "$pagoda" run "$model" -p "Once upon a time" -n 16 --temp 0 --format json 2>/dev/null | tail -n 1)
[ "$p" = "$run_json" ] && ok || bad "PAGODA_ISA=portable output differs: $p"

# --- bench anchors: the CI-sized run checks its own invariants (KV bytes formula, Gate 0 of the fact probes,
# continuity, revocation) and exits 1 when one fails; every kind of result is printed; bad axes are named.
out=$(timeout 120 "$pagoda" bench anchors "$model" --quick --format json --plot "$tmp/anchor_plots" 2>/dev/null)
rc=$?
[ $rc -eq 0 ] && ok || bad "bench anchors --quick exited $rc: $(echo "$out" | tail -n 1)"
echo "$out" | tail -n 1 | grep -qE '^\{"kind":"checks","passed":[1-9][0-9]*,"failed":0,' && ok || bad "bench anchors checks: $(echo "$out" | tail -n 1)"
for kind in cell capacity arrivals cadence facts attention drift continuity revocation; do
  echo "$out" | grep -q "^{\"kind\":\"$kind\"" && ok || bad "bench anchors printed no $kind"
done
for mode in none text text-cached text-cached-evicted anchor anchor-layers rag; do
  echo "$out" | grep -q "\"kind\":\"cell\".*\"mode\":\"$mode\"" && ok || bad "bench anchors: no $mode cell"
done
echo "$out" | grep '"mode":"anchor"' | grep -q '"pinned_bytes":[1-9]' && ok || bad "bench anchors: anchor cells pin nothing"
echo "$out" | grep '"kind":"arrivals"' | grep -q '"mode":"anchor".*"requests":6,' && ok || bad "bench anchors: no anchor arrivals cell"
echo "$out" | grep '"kind":"cadence"' | grep -q '"cadence":"step"' && ok || bad "bench anchors: no step cadence cell"
for f in latency_vs_anchor_length throughput_vs_concurrency capacity_vs_anchor_length cadence_slowdown; do
  grep -q '<svg' "$tmp/anchor_plots/$f.svg" 2>/dev/null && ok || bad "bench anchors --plot: no $f.svg"
done
expect_error "bench anchors mode" "unknown mode 'anchors'" -- bench anchors "$model" --modes anchors
expect_error "bench anchors cadence" "unknown verification cadence 'hourly'" -- bench anchors "$model" --cadence hourly
expect_error "bench anchors layers" "--anchor-layers: '9'" -- bench anchors "$model" --anchor-layers 9

# --- bench anchor-memory: a small run of every mode; the anchor holding the system turn equals text (Gate 0 for
# chat, the command exits 1 otherwise); bad modes and masks are named.
out=$(timeout 120 "$pagoda" bench anchor-memory "$model" --anchors 2 --questions-per-anchor 3 --distractors 10 \
  --max-tokens 6 --layer-masks '0;1-2:2' --format json 2>/dev/null)
rc=$?
[ $rc -eq 0 ] && ok || bad "bench anchor-memory exited $rc"
python3 - "$out" <<'PY' && ok || bad "bench anchor-memory JSON: $(echo "$out" | head -c 300)"
import json, sys
d = json.loads(sys.argv[1])
modes = [m["mode"] + ("/" + m["mask"] if "mask" in m else "") for m in d["modes"]]
assert modes == ["none", "text", "anchor", "anchor-layers/0", "anchor-layers/1-2:2", "anchor-system", "rag", "rag-user"], modes
assert d["questions"] == 6 and d["anchors"] == 2, d
assert d["gate0_anchor_system_equals_text"] == {"equal": 6, "n": 6}, d["gate0_anchor_system_equals_text"]
for m in d["modes"]:
    assert len(m["answers"]) == 6 and m["accuracy"]["n"] == 6, m["mode"]
    assert all(a["logprob"] < 0 for a in m["answers"]), m["mode"]
    assert ("retrieval_hits" in m) == m["mode"].startswith("rag"), m["mode"]
masked = [m for m in d["modes"] if m["mode"] == "anchor-layers"]
assert masked[0]["visible_layers"] == 1 and masked[1]["visible_layers"] == 1, masked
assert masked[0]["anchor_kv_bytes_hidden"] > 0
PY
expect_error "bench anchor-memory mode" "--modes: 'anchors' is not a mode" -- bench anchor-memory "$model" --modes anchors
expect_error "bench anchor-memory mask" "--layer-masks: '99'" -- bench anchor-memory "$model" --layer-masks 99
expect_error "bench anchor-memory step" "has no step" -- bench anchor-memory "$model" --layer-masks 0-1:x
expect_error "bench anchors concurrency" "--concurrency: 'many'" -- bench anchors "$model" --concurrency many
expect_error "bench anchors context" "exceeds the model's context" -- bench anchors "$model" --contexts 100000

# --- bench anchors --base-url: the serving cells through a running `pagoda serve` (HTTP, SSE, the admin API for
# the anchor); the server's prefix-cache counters must show text-cached sharing and text (salted) not sharing.
mkdir "$tmp/ak"
"$pagoda" anchor keygen -o "$tmp/ak/op" >/dev/null 2>&1 &&
  "$pagoda" anchor root --role "root=$tmp/ak/op.pub" --role "anchor=$tmp/ak/op.pub" --role "revocation=$tmp/ak/op.pub" \
    --version 1 --expires +30d -o "$tmp/ak/root.json" >/dev/null 2>&1 && ok || bad "anchor keys for bench --base-url"
"$pagoda" serve "$model" --port 0 --kv-cache-mem 16MiB --anchor-trust-root "$tmp/ak/root.json" --admin-api-key adm \
  2>"$tmp/served" &
served=$!
for _ in $(seq 100); do grep -q "serving '" "$tmp/served" && break; sleep 0.1; done
sport=$(grep -o "serving '.*' on http://[0-9.]*:[0-9]*" "$tmp/served" | sed 's/.*://')
out=$(timeout 180 "$pagoda" bench anchors "$model" --base-url "http://127.0.0.1:$sport" --admin-api-key adm \
  --anchor-key "$tmp/ak/op.key" --anchor-lengths 32 --contexts 16 --concurrency 2 -n 4 --waves 2 --capacity-blocks 0 \
  --check --format json 2>"$tmp/bench_err")
rc=$?
[ $rc -eq 0 ] && ok || bad "bench anchors --base-url exited $rc: $(tail -n 3 "$tmp/bench_err")"
echo "$out" | tail -n 1 | grep -qE '^\{"kind":"checks","passed":[1-9][0-9]*,"failed":0,' && ok || bad "bench anchors --base-url checks: $(echo "$out" | tail -n 1)"
for mode in none text text-cached text-cached-evicted anchor rag; do
  echo "$out" | grep "\"kind\":\"cell\".*\"mode\":\"$mode\"" | grep -q '"transport":"http"' && ok || bad "bench anchors --base-url: no http $mode cell"
done
echo "$out" | grep -q '"mode":"anchor-layers"' && bad "bench anchors --base-url ran anchor-layers" || ok
expect_error "bench anchors --base-url anchor-layers" "anchor-layers" -- bench anchors "$model" \
  --base-url "http://127.0.0.1:$sport" --modes anchor-layers --contexts 16
expect_error "bench anchors --base-url anchor without key" "--anchor-key" -- bench anchors "$model" \
  --base-url "http://127.0.0.1:$sport" --modes anchor --admin-api-key adm --contexts 16
expect_error "bench anchors --peer-url nothing listening" "127.0.0.1:9" -- bench anchors "$model" \
  --peer-url http://127.0.0.1:9 --modes none --contexts 16
kill -TERM "$served"; wait "$served" && ok || bad "serve (bench --base-url) did not exit 0: $(tail -n 3 "$tmp/served")"

# --- bench serve (load generator) and serve: flag and reachability errors; the server itself is tested in tests/server
expect_error "bench serve nothing listening" "cannot connect" -- bench serve --base-url http://127.0.0.1:9 --model m
expect_error "bench serve concurrency 0" "concurrency" -- bench serve --base-url http://127.0.0.1:9 --model m --concurrency 1,0
expect_error "bench serve bad url" "base-url" -- bench serve --base-url ftp://x --model m
expect_error "bench without model" "model" -- bench
expect_error "serve missing model" "model.gguf|(File|Path) does not exist" -- serve "$tmp/missing.gguf"
expect_error "serve bad port" "port" -- serve "$model" --port 70000
expect_error "serve bad keys file" "TENANT KEY" -- serve "$model" --api-keys-file "$model"
# A second server on the port of a running one: a clear error, exit 1.
"$pagoda" serve "$model" --port 0 --kv-cache-mem 16MiB 2>"$tmp/first" &
first=$!
for _ in $(seq 100); do grep -q "serving '" "$tmp/first" && break; sleep 0.1; done
port=$(grep -o "serving '.*' on http://[0-9.]*:[0-9]*" "$tmp/first" | sed 's/.*://')
expect_error "serve on a port in use" "cannot listen on 127.0.0.1:$port" -- serve "$model" --port "$port" --kv-cache-mem 16MiB
kill -TERM "$first"; wait "$first" && ok || bad "serve did not exit 0 on SIGTERM: $(cat "$tmp/first")"

# --- other architectures and Hugging Face folders: each twin gives the same greedy tokens through run, batch,
# bench and serve; convert writes a GGUF that runs the same.
arch="$shared/models/arch"
for a in qwen2 gpt2 gptneox phi3 qwen3; do
  g=$(timeout 60 "$pagoda" run "$arch/$a.gguf" -p "Once upon a time" -n 12 --temp 0 --format json 2>/dev/null | tail -n 1)
  h=$(timeout 60 "$pagoda" run "$arch/$a-hf" -p "Once upon a time" -n 12 --temp 0 --format json 2>/dev/null | tail -n 1)
  [ -n "$g" ] && [ "$g" = "$h" ] && ok || bad "run $a: gguf '$g' vs folder '$h'"
done
echo '{"id": "x", "prompt": "Once upon a time", "max_tokens": 6, "temperature": 0}' >"$tmp/arch.jsonl"
timeout 60 "$pagoda" batch "$arch/gpt2-hf" --input "$tmp/arch.jsonl" --output "$tmp/arch-hf.out" 2>/dev/null &&
  timeout 60 "$pagoda" batch "$arch/gpt2.gguf" --input "$tmp/arch.jsonl" --output "$tmp/arch-gguf.out" 2>/dev/null &&
  cmp -s "$tmp/arch-hf.out" "$tmp/arch-gguf.out" && grep -q '"finish_reason":"length"' "$tmp/arch-hf.out" && ok ||
  bad "batch on a folder: $(cat "$tmp/arch-hf.out")"
bench=$(timeout 120 "$pagoda" bench "$arch/qwen3-hf" -p 16 -n 4 -r 1 --format json 2>/dev/null | tail -n 1)
echo "$bench" | grep -qE '"decode_tok_s":[0-9]' && ok || bad "bench on a folder: $bench"
timeout 60 "$pagoda" inspect "$arch/qwen2-hf" >"$tmp/inspect" 2>&1 && grep -q "format: Hugging Face folder" "$tmp/inspect" &&
  grep -q "blk.1.attn_q.bias" "$tmp/inspect" && ok || bad "inspect a folder: $(head -5 "$tmp/inspect")"
timeout 60 "$pagoda" convert "$arch/gptneox-hf" -o "$tmp/neox.gguf" --dtype f32 2>/dev/null && ok || bad "convert"
g=$(timeout 60 "$pagoda" run "$tmp/neox.gguf" -p "Once upon a time" -n 12 --temp 0 --format json 2>/dev/null | tail -n 1)
h=$(timeout 60 "$pagoda" run "$arch/gptneox.gguf" -p "Once upon a time" -n 12 --temp 0 --format json 2>/dev/null | tail -n 1)
[ -n "$g" ] && [ "$g" = "$h" ] && ok || bad "converted gptneox: '$g' vs llama.cpp's '$h'"
timeout 60 "$pagoda" convert "$arch/llama-hf" -o "$tmp/llama-q8.gguf" --dtype q8_0 2>/dev/null &&
  timeout 60 "$pagoda" run "$tmp/llama-q8.gguf" -p hi -n 4 --temp 0 >/dev/null 2>&1 && ok || bad "convert q8_0"
expect_error "convert a file" "is not a folder" -- convert "$arch/llama.gguf" -o "$tmp/x.gguf"
expect_error "convert bad dtype" "dtype 'q3' is not one of" -- convert "$arch/llama-hf" -o "$tmp/x.gguf" --dtype q3
for dtype in q4_k_m iq4_xs q2_k; do
  timeout 60 "$pagoda" convert "$arch/llama-hf" -o "$tmp/llama-$dtype.gguf" --dtype $dtype 2>/dev/null &&
    timeout 60 "$pagoda" run "$tmp/llama-$dtype.gguf" -p hi -n 4 --temp 0 >/dev/null 2>&1 && ok || bad "convert $dtype"
done
"$pagoda" serve "$arch/qwen2-hf" --port 0 --kv-cache-mem 16MiB 2>"$tmp/hfserve" &
hfserve=$!
for _ in $(seq 100); do grep -q "serving '" "$tmp/hfserve" && break; sleep 0.05; done
url=$(grep -o "serving '.*' on http://[0-9.:]*" "$tmp/hfserve" | sed 's/.* on //')
reply=$(curl -s "$url/v1/completions" -H 'Content-Type: application/json' \
  -d '{"prompt": "Once upon a time", "max_tokens": 12, "temperature": 0}')
want=$(timeout 60 "$pagoda" run "$arch/qwen2.gguf" -p "Once upon a time" -n 12 --temp 0 --no-echo 2>/dev/null)
got=$(printf '%s' "$reply" | python3 -c 'import json,sys; print(json.load(sys.stdin)["choices"][0]["text"])' 2>/dev/null)
[ -n "$got" ] && [ "$got" = "$want" ] && ok || bad "serve a folder: '$reply' vs run '$want'"
kill -TERM "$hfserve"; wait "$hfserve" && ok || bad "serve (folder) did not exit 0"

finish_tests
