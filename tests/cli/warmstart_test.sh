#!/usr/bin/env bash
# Warm start end to end (issue #16), small enough for CI (well under a minute on 2 cores): generate the data, fit
# both projector forms, build a library, run the evaluation with warm start off (the served first-token KL must be
# exactly 0) and on, serve through `batch` and `serve` with --warm-start (hits are said in the output, usage and
# metrics), and refuse bad inputs with one clear line.
# Usage: warmstart_test.sh PAGODA_BINARY SHARED_DIR
set -uo pipefail
pagoda="$(realpath "$1")"
shared="$(realpath "$2")"
model="$shared/models/stories260K.gguf"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"; [ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null' EXIT
source "$(dirname "$0")/test_lib.sh"

# --- data, fit, library
"$pagoda" warmstart data -o "$tmp/data" --instances 4 2>"$tmp/err" || bad "data: $(cat "$tmp/err")"
[ "$(wc -l <"$tmp/data/test-pairs.jsonl")" -eq 28 ] && ok || bad "test pairs: $(wc -l <"$tmp/data/test-pairs.jsonl")"
# Deterministic: the same seed writes the same bytes; another seed does not.
"$pagoda" warmstart data -o "$tmp/data2" --instances 4 2>/dev/null
cmp -s "$tmp/data/train-pairs.jsonl" "$tmp/data2/train-pairs.jsonl" && cmp -s "$tmp/data/test-pairs.jsonl" "$tmp/data2/test-pairs.jsonl" \
  && ok || bad "data is not deterministic"
"$pagoda" warmstart data -o "$tmp/data3" --instances 4 --seed 2 2>/dev/null
cmp -s "$tmp/data/test-pairs.jsonl" "$tmp/data3/test-pairs.jsonl" && bad "seed ignored" || ok
# Train and test share no template (the split is by template).
python3 - "$tmp/data" <<'PY' && ok || bad "train/test templates overlap"
import json, sys
d = sys.argv[1]
test = {json.loads(l)["template"] for l in open(d + "/test-pairs.jsonl")}
train = {int(json.loads(l)["source"].split("-")[0][1:]) for l in open(d + "/train-pairs.jsonl")}
sys.exit(0 if test and train and not (test & train) else 1)
PY
for form in shared block-diagonal; do
  if "$pagoda" warmstart fit "$model" --prompts "$tmp/data/train-prompts.jsonl" --pairs "$tmp/data/train-pairs.jsonl" \
      -m 8 --form "$form" -o "$tmp/$form.safetensors" >"$tmp/fit.json" 2>"$tmp/err"; then
    grep -q "\"form\":\"$form\"" "$tmp/fit.json" && ok || bad "fit $form: $(cat "$tmp/fit.json")"
  else
    bad "fit $form: $(cat "$tmp/err")"
  fi
done
# The fit is deterministic.
"$pagoda" warmstart fit "$model" --prompts "$tmp/data/train-prompts.jsonl" --pairs "$tmp/data/train-pairs.jsonl" \
  -m 8 -o "$tmp/again.safetensors" >/dev/null 2>&1
cmp -s "$tmp/shared.safetensors" "$tmp/again.safetensors" && ok || bad "fit is not deterministic"
"$pagoda" warmstart library "$model" --maps "$tmp/shared.safetensors" --prompts "$tmp/data/test-pairs.jsonl" \
  --field source -o "$tmp/lib" >"$tmp/lib.json" 2>"$tmp/err" && grep -q '"entries":28' "$tmp/lib.json" && ok \
  || bad "library: $(cat "$tmp/lib.json" "$tmp/err")"

# --- evaluation: off is exactly cold; on reports every method and the three criteria
"$pagoda" warmstart eval "$model" --maps "$tmp/shared.safetensors" --instances 4 --repeats 1 --off --format json \
  >"$tmp/off.json" 2>"$tmp/err" || bad "eval --off: $(cat "$tmp/err")"
"$pagoda" warmstart eval "$model" --maps "$tmp/shared.safetensors" --maps "$tmp/block-diagonal.safetensors" \
  --instances 4 --repeats 1 --format json --out "$tmp/eval" >"$tmp/on.json" 2>"$tmp/err" || bad "eval: $(cat "$tmp/err")"
python3 - "$tmp/off.json" "$tmp/on.json" "$tmp/eval" <<'PY' && ok || bad "eval results"
import json, os, sys
off, on, out = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
s = off["methods"]["served"]["all"]
assert off["hits"] == 0 and s["n"] == 28, off
assert s["kl_method_cold"]["mean"] == 0.0 and s["kl_method_cold"]["p90"] == 0.0 and s["kl_cold_method"]["mean"] == 0.0, s
assert s["top1_agreement"] == 1.0 and s["first_tokens_agreement"] == 1.0, s
# With warm start on, hits happen and the served method is the projected one on those.
assert on["hits"] > 0, on["hits"]
for m in ["served", "projected:shared", "projected:block-diagonal", "no-projection", "oracle-summary",
          "neighbour-kv", "neighbour-kv-blend", "response-cache", "no-cache", "prefix-cache"]:
    assert on["methods"][m]["all"]["n"] == 28, m
assert on["methods"]["prefix-cache"]["all"]["kl_method_cold"]["mean"] < 1e-9  # exact
for form in ["projected:shared", "projected:block-diagonal"]:
    c = on["criteria"][form]
    assert set(c) == {"ttft_reduction_gt_40pct", "mean_kl_le_0.05", "quality_drop_le_1pct"}, c
    for v in c.values():
        assert v["verdict"] in ("supported", "falsified"), v
assert len(on["tau_sweep"]) == 14 and on["ttft_by_length"], on
assert on["methods"]["oracle-summary:R=1"]["all"]["n"] == 28
assert sum(1 for _ in open(os.path.join(out, "requests.jsonl"))) == 28
assert open(os.path.join(out, "plots.svg")).read().startswith("<svg")
PY

# --- question-answer data: answers, library distractors, the other two projector forms, accuracy with intervals
"$pagoda" warmstart data --task qa -o "$tmp/qa" --instances 2 2>"$tmp/err" || bad "qa data: $(cat "$tmp/err")"
python3 - "$tmp/qa" <<'PY' && ok || bad "qa data files"
import json, sys
d = sys.argv[1]
test = [json.loads(l) for l in open(d + "/test-pairs.jsonl")]
dis = [json.loads(l) for l in open(d + "/library-distractors.jsonl")]
assert len(test) == 4 * 5 and all(t["answer"] and t["target"].endswith(("in", "is", "called", " a")) for t in test), test[0]
assert sum(x["near_miss"] for x in dis) == 4 * 2 and sum(not x["near_miss"] for x in dis) == len(test), len(dis)
PY
for form in slot-mixing target-aware; do
  "$pagoda" warmstart fit "$model" --prompts "$tmp/qa/train-prompts.jsonl" --pairs "$tmp/qa/train-pairs.jsonl" \
    -m 8 --form "$form" -o "$tmp/qa-$form.safetensors" >"$tmp/fit.json" 2>"$tmp/err" \
    && grep -q "\"form\":\"$form\"" "$tmp/fit.json" && ok || bad "qa fit $form: $(cat "$tmp/err" "$tmp/fit.json")"
done
for distractors in all none; do
  "$pagoda" warmstart eval "$model" --maps "$tmp/qa-slot-mixing.safetensors" --maps "$tmp/qa-target-aware.safetensors" \
    --task qa --instances 2 --repeats 1 --distractors "$distractors" --format json >"$tmp/qa-$distractors.json" \
    2>"$tmp/err" || bad "qa eval $distractors: $(cat "$tmp/err")"
done
python3 - "$tmp/qa-all.json" "$tmp/qa-none.json" <<'PY' && ok || bad "qa eval results"
import json, sys
a, n = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert a["library"]["entries"] == 20 + 28 and n["library"]["entries"] == 20, (a["library"], n["library"])
assert n["nearest_neighbour_kind"] == {"own-source": 20}, n["nearest_neighbour_kind"]
assert sum(a["nearest_neighbour_kind"].values()) == 20
for s in (a, n):
    assert s["cold_answer_accuracy"]["n"] == 20
    for m in ["projected:slot-mixing", "projected:target-aware", "oracle-summary:R=1", "prefix-cache"]:
        st = s["methods"][m]["all"]
        acc, drop = st["answer_accuracy"], st["accuracy_drop_vs_cold"]
        assert 0 <= acc["low"] <= acc["rate"] <= acc["high"] <= 1 and acc["n"] == 20, (m, acc)
        assert drop["low"] <= drop["difference"] <= drop["high"], (m, drop)
    # The exact prefix cache answers exactly as cold does.
    assert s["methods"]["prefix-cache"]["all"]["accuracy_drop_vs_cold"]["difference"] == 0.0
    q = s["criteria"]["projected:slot-mixing"]["quality_drop_le_1pct"]
    assert q["measure"] == "answer accuracy" and "low" in q and "high" in q, q
PY

# --- batch with warm start: hits are said per line and in the stats; a short prompt misses
python3 - "$tmp/data/test-pairs.jsonl" >"$tmp/req.jsonl" <<'PY'
import json, sys
for i, line in enumerate(open(sys.argv[1])):
    print(json.dumps({"id": i, "prompt": json.loads(line)["target"], "max_tokens": 6, "temperature": 0}))
print(json.dumps({"id": "short", "prompt": "Hi", "max_tokens": 3, "temperature": 0}))
PY
"$pagoda" batch "$model" --input "$tmp/req.jsonl" --output "$tmp/out.jsonl" --kv-cache-mem 64MiB -t 2 \
  --warm-start "$tmp/shared.safetensors" --warm-start-library "$tmp/lib" 2>"$tmp/err" || bad "batch: $(cat "$tmp/err")"
python3 - "$tmp/out.jsonl" "$tmp/err" <<'PY' && ok || bad "batch warm start: $(cat "$tmp/err")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
hits = sum(1 for l in lines if l["warm_start"]["used"])
assert lines[-1]["id"] == "short" and lines[-1]["warm_start"]["used"] is False
stats = json.loads(open(sys.argv[2]).read().split("pagoda: stats ")[1])
assert hits > 0 and stats["warm_start"]["hits"] == hits and stats["warm_start"]["misses"] == len(lines) - hits, stats
PY
# Without --warm-start the lines say nothing about it.
"$pagoda" batch "$model" --input "$tmp/req.jsonl" --output "$tmp/cold.jsonl" --kv-cache-mem 64MiB -t 2 2>/dev/null
grep -q warm_start "$tmp/cold.jsonl" && bad "warm_start said while off" || ok

# --- serve: usage.pagoda.warm_start and the metrics
"$pagoda" serve "$model" --port 0 -t 2 --kv-cache-mem 64MiB --warm-start "$tmp/shared.safetensors" \
  --warm-start-library "$tmp/lib" --warm-start-threshold 0.5 2>"$tmp/serve.log" &
server_pid=$!
url=""
for _ in $(seq 200); do
  url="$(grep -o "serving '.*' on http://[0-9.:]*" "$tmp/serve.log" | sed 's/.* on //')"
  [ -n "$url" ] && break
  sleep 0.05
done
if [ -z "$url" ]; then
  bad "serve did not start: $(cat "$tmp/serve.log")"
else
  target="$(python3 -c 'import json,sys; print(json.dumps({"model": "stories260K", "prompt": json.loads(open(sys.argv[1]).readline())["target"], "max_tokens": 4, "temperature": 0}))' "$tmp/data/test-pairs.jsonl")"
  curl -s "$url/v1/completions" -H 'Content-Type: application/json' -d "$target" >"$tmp/resp.json"
  python3 -c 'import json,sys; u=json.load(open(sys.argv[1]))["usage"]; assert u["pagoda"]["warm_start"] is True, u' "$tmp/resp.json" \
    && ok || bad "serve usage: $(cat "$tmp/resp.json")"
  curl -s "$url/v1/completions" -H 'Content-Type: application/json' -d '{"model":"stories260K","prompt":"Hi","max_tokens":2}' >"$tmp/resp2.json"
  python3 -c 'import json,sys; u=json.load(open(sys.argv[1]))["usage"]; assert u["pagoda"]["warm_start"] is False, u' "$tmp/resp2.json" \
    && ok || bad "serve usage (miss): $(cat "$tmp/resp2.json")"
  curl -s "$url/metrics" >"$tmp/metrics"
  grep -qE '^pagoda:warm_start_hits_total\{[^}]*\} 1$' "$tmp/metrics" && grep -qE '^pagoda:warm_start_misses_total\{[^}]*\} 1$' "$tmp/metrics" \
    && grep -qE '^pagoda:warm_start_pending\{[^}]*\} 0$' "$tmp/metrics" \
    && ok || bad "metrics: $(grep warm_start "$tmp/metrics")"
  kill "$server_pid"; wait "$server_pid" 2>/dev/null; server_pid=""
fi

# --- bad inputs: one clear line each
expect_error "library without maps" "warm-start-library requires --warm-start|requires" -- batch "$model" --input "$tmp/req.jsonl" --output "$tmp/x" --warm-start-library "$tmp/lib"
printf 'not a safetensors file' >"$tmp/bad.safetensors"
expect_error "corrupt maps" "warm-start" -- batch "$model" --input "$tmp/req.jsonl" --output "$tmp/x" --warm-start "$tmp/bad.safetensors" --warm-start-library "$tmp/lib"
expect_error "maps for another model" "fitted for .* the model has" -- batch "$shared/models/arch/gpt2.gguf" --input "$tmp/req.jsonl" --output "$tmp/x" --warm-start "$tmp/shared.safetensors" --warm-start-library "$tmp/lib"
mkdir -p "$tmp/empty"
expect_error "missing library" "library" -- batch "$model" --input "$tmp/req.jsonl" --output "$tmp/x" --warm-start "$tmp/shared.safetensors" --warm-start-library "$tmp/empty"
expect_error "threshold out of range" "threshold" -- batch "$model" --input "$tmp/req.jsonl" --output "$tmp/x" --warm-start "$tmp/shared.safetensors" --warm-start-library "$tmp/lib" --warm-start-threshold 3
expect_error "unknown form" "unknown projector form" -- warmstart fit "$model" --prompts "$tmp/data/train-prompts.jsonl" --pairs "$tmp/data/train-pairs.jsonl" --form dense -o "$tmp/x.safetensors"
printf '{"source":"nope","target":"t0-i0-t"}\n' >"$tmp/badpairs.jsonl"
expect_error "pair names a missing prompt" "lacks" -- warmstart fit "$model" --prompts "$tmp/data/train-prompts.jsonl" --pairs "$tmp/badpairs.jsonl" -o "$tmp/x.safetensors"
printf 'garbage\n' >"$tmp/garbage.jsonl"
expect_error "not JSONL" "not a JSON object" -- warmstart fit "$model" --prompts "$tmp/garbage.jsonl" --pairs "$tmp/badpairs.jsonl" -o "$tmp/x.safetensors"

finish_tests
