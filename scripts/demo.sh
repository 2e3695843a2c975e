#!/usr/bin/env bash
# The main job: install what is missing, build Release, generate a story with the tiny real model, then serve it:
# `pagoda serve` on a free port, one streamed chat completion with curl, a few lines of /metrics, a clean stop.
set -euo pipefail
cd "$(dirname "$0")/.."
model=../shared/models/stories260K.gguf
bash scripts/install-deps.sh
# The same configuration as the test command (scripts/configure.sh), building only the binary.
bash scripts/configure.sh release build
cmake --build build --target pagoda

echo "== pagoda run: a story"
./build/pagoda run "$model" -p "Once upon a time" -n 200 --temp 0.8 --seed 42

echo
echo "== pagoda serve: an OpenAI-compatible server on a free port"
log="$(mktemp)"
./build/pagoda serve "$model" --port 0 --kv-cache-mem 64MiB 2>"$log" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; rm -f "$log"' EXIT
url=""
for _ in $(seq 300); do
  url="$(grep -o "serving '.*' on http://[0-9.:]*" "$log" | sed 's/.* on //' || true)"
  [ -n "$url" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; echo "demo: the server exited" >&2; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { cat "$log" >&2; echo "demo: the server did not start in 30 s" >&2; exit 1; }
sed 's/^/  /' "$log"

body='{"model": "stories260K", "messages": [{"role": "user", "content": "Tell me about a cat."}],
       "max_tokens": 48, "temperature": 0.8, "seed": 7, "stream": true}'
echo
echo "\$ curl -N $url/v1/chat/completions -d '{\"messages\": [...], \"stream\": true, ...}'"
events="$(curl -sSN --max-time 60 "$url/v1/chat/completions" -H 'Content-Type: application/json' -d "$body")"
echo "$events" | grep '^data: ' | head -n 3 | cut -c 1-160 | sed 's/^/  /'
echo "  ... ($(echo "$events" | grep -c '^data: ') events, the last one 'data: [DONE]')"
# The reply: every content delta joined (node is installed for the server tests).
echo "reply:"
echo "$events" | node -e '
  let text = "";
  for (const line of require("fs").readFileSync(0, "utf8").split("\n")) {
    if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
    for (const c of JSON.parse(line.slice(6)).choices) text += c.delta.content ?? "";
  }
  console.log("  " + text.trim().replace(/\n/g, "\n  "));'

echo
echo "\$ curl $url/metrics | grep ..."
curl -sS --max-time 10 "$url/metrics" |
  grep -E '^pagoda:(num_requests_running|prompt_tokens_total|generation_tokens_total|time_to_first_token_seconds_(count|sum)|kv_cache_usage_perc)' |
  sed 's/^/  /'

echo
echo "== stopping the server (SIGTERM drains, then exits 0)"
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
trap 'rm -f "$log"' EXIT
tail -n 2 "$log" | sed 's/^/  /'
[ "$status" -eq 0 ] || { echo "demo: the server exited with status $status" >&2; exit 1; }
echo "demo: done"
