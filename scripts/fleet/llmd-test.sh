#!/usr/bin/env bash
# llm-d's KV-cache indexer (llm-d-kv-cache v0.5.0) against three pagoda replicas' KV-cache events.
#
# Uses the indexer built by scripts/install-fleet-tools.sh (scripts/fleet/llmd: llm-d's packages, no tokenizer
# library). Starts replicas pod-a, pod-b, pod-c with --kv-events-config (topic kv@<pod>@<model>, event_form "array"), subscribes
# the indexer to all three, sends a ~300-token shared-prefix prompt to pod-b only, then scores another prompt with
# that prefix (token ids from pod-a's /v1/completions/render): pod-b must score highest, exactly cpu-weight (0.8)
# x the shared full blocks, and the others 0. Then the same with a second prefix on pod-c. Prints PASS/FAIL lines
# and the event delay (completion returned -> indexer scores it). Exit status 0 only if every check passed.
#
#   scripts/fleet/llmd-test.sh [MODEL.gguf]
# Env: PAGODA (default build/pagoda), LLMD_V (scorer log verbosity: 4 debug, 5 trace), BLOCK_SIZE (16),
# EVENT_FORM (array; "map" shows that v0.5.0 indexes nothing from map-form events).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PAGODA=${PAGODA:-$ROOT/build/pagoda}
MODEL_FILE=${1:-$ROOT/.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf}
MODEL=SmolLM2
BLOCK_SIZE=${BLOCK_SIZE:-16}
EVENT_FORM=${EVENT_FORM:-array}
BIN=$ROOT/.cache/fleet/bin/llmd-scorer
T0=$(date +%s.%N)

[[ -x $BIN ]] || { echo "llmd-test: $BIN is missing; run scripts/install-fleet-tools.sh first" >&2; exit 1; }

# ---- processes ----
PIDS=()
LOGDIR=$(mktemp -d /tmp/llmd-test.XXXXXX)
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
read -r -a PORTS < <(python3 -c '
import socket
ss=[socket.socket() for _ in range(10)]
for s in ss: s.bind(("127.0.0.1",0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')
PODS=(pod-a pod-b pod-c)
declare -A HTTP
SUBARGS=()
for i in 0 1 2; do
  pod=${PODS[$i]} http=${PORTS[$((3*i))]} pub=${PORTS[$((3*i+1))]} rep=${PORTS[$((3*i+2))]}
  HTTP[$pod]=$http
  cfg='{"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": "tcp://*:'$pub'",'
  cfg+=' "replay_endpoint": "tcp://*:'$rep'", "topic": "kv@'$pod'@'$MODEL'", "event_form": "'$EVENT_FORM'"}'
  # A small pool (64 blocks of 16: about three of the test's prompts), so that the eviction check can evict.
  "$PAGODA" serve "$MODEL_FILE" --port "$http" -t 1 --block-size "$BLOCK_SIZE" --num-blocks 64 --served-model-name "$MODEL" \
    --kv-events-config "$cfg" > "$LOGDIR/$pod.log" 2>&1 &
  PIDS+=($!)
  SUBARGS+=(-pod "$pod=tcp://127.0.0.1:$pub")
done
SCORER=127.0.0.1:${PORTS[9]}
"$BIN" -v "${LLMD_V:-0}" -listen "$SCORER" -model "$MODEL" -block-size "$BLOCK_SIZE" "${SUBARGS[@]}" \
  -render "http://127.0.0.1:${HTTP[pod-a]}" > "$LOGDIR/scorer.log" 2>&1 &
PIDS+=($!)
for pod in "${PODS[@]}"; do
  for _ in $(seq 300); do
    curl -sf "http://127.0.0.1:${HTTP[$pod]}/health" > /dev/null && break
    sleep 0.1
  done
  curl -sf "http://127.0.0.1:${HTTP[$pod]}/health" > /dev/null || { echo "FAIL: $pod not ready"; cat "$LOGDIR/$pod.log"; exit 1; }
done
for _ in $(seq 100); do curl -sf "http://$SCORER/pods" > /dev/null && break; sleep 0.1; done
sleep 1  # the SUB sockets' connect + subscription (ZMQ's slow joiner)
echo "replicas up: pod-a :${HTTP[pod-a]}, pod-b :${HTTP[pod-b]}, pod-c :${HTTP[pod-c]}; scorer $SCORER; logs $LOGDIR"

# ---- checks ----
set +e
MODEL=$MODEL SCORER=$SCORER HTTP_A=${HTTP[pod-a]} HTTP_B=${HTTP[pod-b]} HTTP_C=${HTTP[pod-c]} \
  BLOCK_SIZE=$BLOCK_SIZE python3 - <<'EOF'
import json, os, time, urllib.request
M, S, BS = os.environ["MODEL"], os.environ["SCORER"], int(os.environ["BLOCK_SIZE"])
H = {"pod-a": os.environ["HTTP_A"], "pod-b": os.environ["HTTP_B"], "pod-c": os.environ["HTTP_C"]}
CPU_WEIGHT = 0.8  # llm-d's default weight for medium "cpu" (pagoda announces medium "CPU")

def post(url, body):
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.load(r)

def render(prompt):  # the ids a replica would prefill, from pod-a (all replicas serve the same model)
    return post(f"http://127.0.0.1:{H['pod-a']}/v1/completions/render", {"model": M, "prompt": prompt})[0]["token_ids"]

def scores(ids):
    return post(f"http://{S}/score", {"token_ids": ids})

def prefix(topic, n):
    words = [f"{topic} rule {i}: answer politely, cite the handbook section {i * 7 % 31}, and never guess." for i in range(n)]
    return "You are the support assistant for " + topic + ". " + " ".join(words) + "\n"

fails = passes = 0
def check(name, ok, detail):
    global fails, passes
    fails += 0 if ok else 1
    passes += 1 if ok else 0
    print(f"{'PASS' if ok else 'FAIL'}: {name}: {detail}")

for owner, topic in (("pod-b", "the Aurora billing system"), ("pod-c", "the Nimbus storage cluster")):
    sysp = prefix(topic, 12)
    stored_prompt = sysp + "Question: how do I reset my password?\nAnswer:"
    query_prompt = sysp + "Question: where are the invoices kept?\nAnswer:"
    sp, qp = render(stored_prompt), render(query_prompt)
    common = next((i for i, (a, b) in enumerate(zip(sp, qp)) if a != b), min(len(sp), len(qp)))
    shared_blocks = common // BS
    before = scores(qp)["scores"]
    t_send = time.perf_counter()
    post(f"http://127.0.0.1:{H[owner]}/v1/completions", {"model": M, "prompt": stored_prompt, "max_tokens": 1})
    t_done = time.perf_counter()
    # Poll until the owner scores the full shared prefix (events are asynchronous), at most 5 s.
    want = CPU_WEIGHT * shared_blocks
    while True:
        r = scores(qp)
        sc = r["scores"]
        if abs(sc.get(owner, 0) - want) < 1e-6 or time.perf_counter() - t_done > 5:
            break
        time.sleep(0.002)
    delay_ms = (time.perf_counter() - t_done) * 1e3
    print(f"prefix on {owner}: stored prompt {len(sp)} tokens, query {len(qp)} tokens, shared {common} tokens = "
          f"{shared_blocks} full blocks; scores before {json.dumps(before)}, after {json.dumps(sc)} "
          f"(query {r['blocks']} blocks); completion took {(t_done - t_send) * 1e3:.0f} ms; "
          f"indexed {delay_ms:.1f} ms after it returned")
    others = {p: sc.get(p, 0) for p in H if p != owner}
    check(f"{owner} highest", sc.get(owner, 0) > max(others.values()), json.dumps(sc))
    check(f"{owner} = {CPU_WEIGHT} x {shared_blocks} blocks", abs(sc.get(owner, 0) - want) < 1e-6,
          f"{sc.get(owner, 0):.2f} vs {want:.2f}")
    check(f"others 0 for {owner}'s prefix", all(v == 0 for v in others.values()), json.dumps(others))

# The first prefix is still pod-b's alone after pod-c's request.
qp = render(prefix("the Aurora billing system", 12) + "Question: anything else?\nAnswer:")
sc = scores(qp)["scores"]
check("first prefix still pod-b only", sc.get("pod-b", 0) > 0 and sc.get("pod-c", 0) == 0 and sc.get("pod-a", 0) == 0,
      json.dumps(sc))
# Eviction: pod-b serves other long prompts until its small pool has evicted the first prefix; its BlockRemoved
# events must take the prefix out of the index (the router's view goes stale for at most the event delay).
first_q = qp
t_evicted = None
for i in range(6):
    post(f"http://127.0.0.1:{H['pod-b']}/v1/completions",
         {"model": M, "prompt": prefix(f"the Zephyr archive number {i}", 12) + "Question: why?\nAnswer:", "max_tokens": 1})
    t_done = time.perf_counter()
    while time.perf_counter() - t_done < 0.5:
        if scores(first_q)["scores"].get("pod-b", 0) == 0:
            t_evicted = (time.perf_counter() - t_done) * 1e3
            break
        time.sleep(0.002)
    if t_evicted is not None:
        break
check("eviction reaches the index: the evicted prefix scores pod-b 0",
      t_evicted is not None,
      f"after {i + 1} other prompts on pod-b, {t_evicted:.1f} ms after the last returned" if t_evicted is not None
      else "pod-b still scored after 6 other prompts")
# An unrelated prompt scores nobody.
sc = scores(render("Tell me a story about a dragon who collects teapots. " * 4))["scores"]
check("unrelated prompt scores nobody", all(v == 0 for v in sc.values()), json.dumps(sc))
print(f"{passes} passed, {fails} failed")
raise SystemExit(1 if fails else 0)
EOF
rc=$?
set -e
if [[ $rc == 0 ]]; then rm -rf "$LOGDIR"; fi
echo "total $(python3 -c "import time; print(f'{time.time() - $T0:.1f}')") s"
exit $rc
