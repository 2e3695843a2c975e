#!/usr/bin/env python3
"""Does publishing KV-cache events slow decoding? Three servers in turn, interleaved over ROUNDS rounds: events off,
events on with no subscriber, events on with a subscriber that connects and never reads (ZMQ queues to its
high-water mark, then drops). Workload: CONC concurrent completions of distinct 64-token prompts, max_tokens NEW,
ignore_eos, temperature 0; output tok/s per run, medians and ratios to "off".
Usage: kv_events_overhead.py PAGODA MODEL [ROUNDS] [CONC] [NEW]   (python3 with zmq: Debian's python3-zmq)"""
import concurrent.futures as cf
import json
import re
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

import zmq

pagoda, model = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
conc = int(sys.argv[4]) if len(sys.argv) > 4 else 8
new = int(sys.argv[5]) if len(sys.argv) > 5 else 128


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(extra):
    proc = subprocess.Popen([pagoda, "serve", model, "--port", "0", "-t", "2"] + extra, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    while True:
        line = proc.stderr.readline()
        if not line:
            raise RuntimeError("server exited")
        m = re.search(r"serving '.*' on (http://[0-9.]+:\d+)", line)
        if m:
            return proc, m.group(1)


def one(url, i, r):
    prompt = [10 + ((i * 31 + r * 7 + j * 13) % 400) for j in range(64)]
    body = {"prompt": prompt, "max_tokens": new, "temperature": 0, "ignore_eos": True}
    req = urllib.request.Request(url + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as resp:
        return json.load(resp)["usage"]["completion_tokens"]


def run(mode, r):
    port = free_port()
    extra = [] if mode == "off" else ["--kv-events-config",
                                      json.dumps({"enable_kv_cache_events": True, "endpoint": f"tcp://*:{port}"})]
    proc, url = start(extra)
    ctx = sub = None
    if mode == "stalled subscriber":
        ctx = zmq.Context()
        sub = ctx.socket(zmq.SUB)
        sub.setsockopt(zmq.RCVHWM, 1)
        sub.connect(f"tcp://127.0.0.1:{port}")
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        time.sleep(0.3)
    one(url, 999, r)  # warm-up
    t0 = time.perf_counter()
    with cf.ThreadPoolExecutor(conc) as ex:
        tokens = sum(ex.map(lambda i: one(url, i, r), range(conc)))
    dt = time.perf_counter() - t0
    batches = None
    if mode != "off":
        m = re.search(r"^pagoda:kv_events_published_batches_total\{[^}]*\} (\d+)$",
                      urllib.request.urlopen(url + "/metrics").read().decode(), re.M)
        batches = int(m.group(1))
    proc.terminate()
    proc.wait()
    if sub:
        sub.close(0)
        ctx.term()
    return tokens / dt, batches


modes = ["off", "no subscriber", "stalled subscriber"]
results = {m: [] for m in modes}
for r in range(rounds):
    for m in modes:
        tps, batches = run(m, r)
        results[m].append(tps)
        print(f"round {r} {m:20s} {tps:8.1f} tok/s" + (f"  ({batches} event batches)" if batches is not None else ""),
              flush=True)
base = statistics.median(results["off"])
for m in modes:
    med = statistics.median(results[m])
    print(f"{m:20s} median {med:8.1f} tok/s  ratio to off {med / base:.3f}  (runs {', '.join(f'{x:.1f}' for x in results[m])})")
