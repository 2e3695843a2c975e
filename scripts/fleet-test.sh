#!/usr/bin/env bash
# pagoda replicas under the routers people run, on this machine (loopback only): SGLang Model Gateway in front of
# three replicas (routing, streaming, counting, failover, recovery: scripts/fleet/smg_test.py), then llm-d's
# KV-cache indexer fed by three replicas' KV-cache events (scripts/fleet/llmd-test.sh). About a minute.
#
#   bash scripts/install-fleet-tools.sh   # once: smg and llm-d's indexer into .cache/fleet
#   bash scripts/fleet-test.sh [MODEL.gguf]
# Env: PAGODA (default build/pagoda). The model defaults to SmolLM2 (scripts/fetch-model.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
PAGODA=${PAGODA:-build/pagoda}
MODEL=${1:-.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf}
[ -x "$PAGODA" ] || { echo "fleet-test: $PAGODA is missing; build pagoda first (README)" >&2; exit 1; }
[ -f "$MODEL" ] || { echo "fleet-test: $MODEL is missing; run scripts/fetch-model.sh" >&2; exit 1; }
for tool in .cache/fleet/bin/smg .cache/fleet/bin/llmd-scorer; do
  [ -x "$tool" ] || { echo "fleet-test: $tool is missing; run scripts/install-fleet-tools.sh first" >&2; exit 1; }
done
status=0
echo "== SGLang Model Gateway (smg 1.13.0), 3 replicas"
/usr/bin/python3 scripts/fleet/smg_test.py --pagoda "$PAGODA" --model "$MODEL" --smg .cache/fleet/bin/smg || status=1
echo "== llm-d KV-cache indexer (llm-d-kv-cache v0.5.0), 3 replicas"
PAGODA="$PAGODA" bash scripts/fleet/llmd-test.sh "$MODEL" || status=1
[ $status = 0 ] && echo "fleet-test: all passed" || echo "fleet-test: FAILED"
exit $status
