"""How stale a router's view of a replica's cache can be: KV-event delay, block committed -> subscriber has it.

    /usr/bin/python3 bench/kv_event_delay.py --pagoda build/pagoda --model M.gguf [--seconds 20] [--concurrency 8]

One replica with --kv-events-config publishes to a subscriber on this machine (Debian's python3-zmq and
python3-msgpack) while `pagoda bench serve` keeps it busy (shared-prefix prompts, so blocks are stored and,
in a small pool, evicted). Each batch's ts is stamped when the engine hands the step's events over (its blocks are
committed, src/server/kv_events_publisher.cpp); the subscriber notes its receive time on the same clock. Reports
the delay p50/p99/max over batches, the batches and events seen, and whether the sequence numbers had gaps.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import msgpack
import zmq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "fleet"))
from fleet import Replica, free_port  # noqa: E402


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pagoda", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--num-blocks", type=int, default=300)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--num-prompts", type=int, default=160)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    workdir = tempfile.mkdtemp(prefix="pagoda-kv-delay-")
    pub = free_port()
    cfg = {"enable_kv_cache_events": True, "publisher": "zmq", "endpoint": f"tcp://*:{pub}", "topic": "kv@a@m"}
    rep = Replica("replica", args.pagoda, args.model, workdir, threads=args.threads,
                  extra_args=["--num-blocks", str(args.num_blocks), "--kv-events-config", json.dumps(cfg)])
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.setsockopt(zmq.RCVTIMEO, 200)
    sub.connect(f"tcp://127.0.0.1:{pub}")
    delays, kinds, seqs = [], {}, []
    stop = threading.Event()

    def receive():
        while not stop.is_set():
            try:
                frames = sub.recv_multipart()
            except zmq.Again:
                continue
            now = time.time()
            ts, events, _rank = msgpack.unpackb(frames[2], raw=False)
            seqs.append(int.from_bytes(frames[1], "big", signed=True))
            delays.append((now - ts) * 1e3)
            for e in events:
                kind = e["type"] if isinstance(e, dict) else e[0]
                kinds[kind] = kinds.get(kind, 0) + 1

    t = threading.Thread(target=receive)
    try:
        rep.start().wait_ready()
        t.start()
        time.sleep(0.5)  # ZMQ's slow joiner: the subscription reaches the publisher
        cmd = [args.pagoda, "bench", "serve", "--base-url", rep.url, "--model", "smollm2", "--num-prefixes", "8",
               "--shared-prefix-len", "256", "--input-len", "64", "--output-len", "32", "--vocab-size", "40000",
               "--num-prompts", str(args.num_prompts), "--concurrency", str(args.concurrency), "--format", "json"]
        bench = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)["runs"][0]
        time.sleep(0.5)
    finally:
        stop.set()
        t.join()
        rep.stop()
    gaps = sum(1 for a, b in zip(seqs, seqs[1:]) if b != a + 1)
    result = {"batches": len(delays), "events": kinds, "sequence_gaps": gaps,
              "delay_ms": {"p50": percentile(delays, 0.5), "p99": percentile(delays, 0.99), "max": max(delays),
                           "mean": statistics.fmean(delays)},
              "load": {"concurrency": args.concurrency, "output_tok_s": bench["output_throughput"],
                       "completed": bench["completed"]},
              "num_blocks": args.num_blocks, "threads": args.threads}
    print(json.dumps(result, indent=1))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
