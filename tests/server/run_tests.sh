#!/usr/bin/env bash
# End-to-end tests of `pagoda serve` with real clients (Node.js): the official OpenAI and Anthropic client libraries, raw HTTP
# with malformed input, server lifecycle (keys, queue, tenants, disconnects, signals) and a bounded load test.
# Usage: run_tests.sh PAGODA_BINARY SHARED_DIR   (npm dependencies: `npm ci` here, done by scripts/test.sh)
set -euo pipefail
binary="$(realpath "$1")"
shared="$(realpath "$2")"
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
if [ ! -d node_modules/openai ] || [ ! -d node_modules/@langchain/openai ] || [ ! -d node_modules/@anthropic-ai/sdk ]; then
  echo "run_tests.sh: installing the npm packages (openai, @anthropic-ai/sdk, ai, @ai-sdk/openai-compatible, @langchain/openai, zod)"
  npm ci --no-audit --no-fund >/dev/null
fi
export PAGODA_BINARY="$binary" PAGODA_MODEL_PATH="$shared/models/stories260K.gguf"
export PAGODA_MODEL=stories260K PAGODA_GOLDEN="$shared/golden/stories260K-greedy.jsonl" PAGODA_SHARED="$shared"

log="$(mktemp)"
"$binary" serve "$PAGODA_MODEL_PATH" --port 0 --kv-cache-mem 256MiB 2>"$log" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 200); do
  grep -q "serving '" "$log" && break
  kill -0 "$pid" 2>/dev/null || { cat "$log"; echo "server exited"; exit 1; }
  sleep 0.05
done
url="$(grep -o "serving '.*' on http://[0-9.:]*" "$log" | sed 's/.* on //')"
[ -n "$url" ] || { cat "$log"; echo "server did not start"; exit 1; }
export PAGODA_URL="$url" PAGODA_PID="$pid"
echo "== server at $url"

node --test --test-reporter=spec openai_client.test.mjs raw_http.test.mjs
echo "== load test"
node load_test.mjs
echo "== lifecycle"
node --test --test-reporter=spec lifecycle.test.mjs
echo "== structured outputs (OpenAI client, AI SDK, LangChain)"
node --test --test-reporter=spec structured_outputs.test.mjs
echo "== tool calling (OpenAI client, AI SDK, LangChain)"
node --test --test-reporter=spec tools.test.mjs
echo "== the Responses and Messages APIs (OpenAI's and Anthropic's npm clients)"
node --test --test-reporter=spec dialects.test.mjs
echo "== what routers ask of a replica: render endpoints, vLLM-named gauges"
node --test --test-reporter=spec render.test.mjs
echo "== every documented request field implemented or refused"
node --test --test-reporter=spec field_walk.test.mjs
echo "== chat templates"
node --test --test-reporter=spec chat_template.test.mjs
echo "== verified anchors"
node --test --test-reporter=spec anchors.test.mjs
echo "== slow and silent clients (more than the server's threads)"
node --test --test-reporter=spec slow_clients.test.mjs
echo "== sharing between tenants: limits, 429 with Retry-After, per-tenant metrics"
node --test --test-reporter=spec tenants.test.mjs
echo "== kill -9 at random points: anchor state and streams"
node --test --test-reporter=spec faults.test.mjs

kill -TERM "$pid"
wait "$pid"
status=$?
[ "$status" -eq 0 ] || { cat "$log"; echo "server exit status $status"; exit 1; }
echo "server tests passed"
