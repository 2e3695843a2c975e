#!/usr/bin/env python3
"""KV-cache events on the wire (pagoda serve --kv-events-config), checked by an independent subscriber: Debian's
pyzmq and msgpack, not pagoda's code. Against stories260K with 16-token blocks and a small pool:
  - frames: topic, 8-byte big-endian sequence numbers from 0 without gaps, msgpack [ts, [events], 0];
  - the first batch (fetched by replay: it is published before any subscriber can join) is AllBlocksCleared;
  - BlockStored: hashes 64-bit and never 0, a parent always announced before its child, block_size tokens per hash,
    the tokens being the prompt's own; a prompt seen before stores nothing new (prefix hit);
  - eviction in a pool too small for every prompt: BlockRemoved only for hashes announced and not yet removed;
  - tenants (--api-keys-file): the same prompt from two tenants gives different hashes;
  - replay: every buffered batch from the asked sequence number, then the end marker (-1, empty payload);
  - the legacy positional form ("event_form": "array");
  - /metrics counts the published batches.
Usage: kv_events_test.py PAGODA SHARED_DIR   (python3 with zmq and msgpack: Debian's python3-zmq, python3-msgpack)"""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import msgpack
import zmq

pagoda, shared = sys.argv[1], os.path.abspath(sys.argv[2])
model = os.path.join(shared, "models/stories260K.gguf")
BLOCK = 16
failures = []
passed = 0


def check(cond, what):
    global passed
    if cond:
        passed += 1
    else:
        failures.append(what)
        print("FAIL:", what, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(extra, events):
    args = [pagoda, "serve", model, "--port", "0", "-t", "2", "--block-size", str(BLOCK), "--num-blocks", "40",
            "--kv-events-config", json.dumps(events)] + extra
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    log, deadline = "", time.time() + 30
    while time.time() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        log += line
        m = re.search(r"serving '.*' on (http://[0-9.]+:\d+)", line)
        if m:
            return proc, m.group(1)
    proc.kill()
    raise RuntimeError("server did not start:\n" + log)


def post(url, path, body, key=None):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json", **({"Authorization": "Bearer " + key} if key else {})})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)


class Subscriber:
    def __init__(self, ctx, port, topic):
        self.sock = ctx.socket(zmq.SUB)
        self.sock.connect(f"tcp://127.0.0.1:{port}")
        self.sock.setsockopt(zmq.SUBSCRIBE, topic.encode())
        self.batches = []  # (seq, ts, events, rank)
        time.sleep(0.3)  # the subscription reaches the publisher

    def drain(self, quiet=0.5):
        deadline = time.time() + quiet
        while time.time() < deadline:
            if self.sock.poll(50):
                frames = self.sock.recv_multipart()
                check(len(frames) == 3, f"three frames per batch: {len(frames)}")
                check(len(frames[1]) == 8, "an 8-byte sequence number")
                seq = int.from_bytes(frames[1], "big", signed=True)
                ts, events, rank = msgpack.unpackb(frames[2], raw=False)
                check(rank == 0 and isinstance(ts, float), "payload [ts, events, rank 0]")
                self.batches.append((seq, ts, events, frames[0]))
                deadline = time.time() + quiet
        return self.batches


def replay(ctx, port, start_seq):
    dealer = ctx.socket(zmq.DEALER)
    dealer.connect(f"tcp://127.0.0.1:{port}")
    dealer.send_multipart([b"", start_seq.to_bytes(8, "big")])
    got = []
    while dealer.poll(5000):
        empty, seq, payload = dealer.recv_multipart()
        seq = int.from_bytes(seq, "big", signed=True)
        if seq == -1:
            check(payload == b"", "the end marker has an empty payload")
            dealer.close(0)
            return got, True
        got.append((seq, msgpack.unpackb(payload, raw=False)))
    dealer.close(0)
    return got, False


def as_map(e):
    """An event in either form, as a dict."""
    if isinstance(e, dict):
        return e
    names = {"BlockStored": ["block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium", "lora_name"],
             "BlockRemoved": ["block_hashes", "medium"], "AllBlocksCleared": []}[e[0]]
    check(len(e) == len(names) + 1, f"positional {e[0]} has its fields: {e}")
    return {"type": e[0], **dict(zip(names, e[1:]))}


ctx = zmq.Context()

# 1. One server, map form, with replay.
pub_port, replay_port = free_port(), free_port()
proc, url = start([], {"enable_kv_cache_events": True, "publisher": "zmq", "endpoint": f"tcp://*:{pub_port}",
                       "replay_endpoint": f"tcp://*:{replay_port}", "topic": "kv"})
try:
    sub = Subscriber(ctx, pub_port, "kv")
    prompts = [[10 + ((i * 7 + j * 3) % 400) for j in range(50)] for i in range(20)]
    for p in prompts:
        post(url, "/v1/completions", {"prompt": p, "max_tokens": 1, "temperature": 0})
    post(url, "/v1/completions", {"prompt": prompts[0], "max_tokens": 1, "temperature": 0})  # a prefix hit
    batches = sub.drain()
    check(len(batches) >= 3, f"batches arrive: {len(batches)}")
    seqs = [b[0] for b in batches]
    check(seqs == list(range(seqs[0], seqs[0] + len(seqs))), f"sequence numbers without gaps: {seqs}")
    check(all(b[3] == b"kv" for b in batches), "the topic frame")
    # The first batches (before the subscriber joined) come back by replay.
    got, ended = replay(ctx, replay_port, 0)
    check(ended, "replay ends with the end marker")
    check([s for s, _ in got] == list(range(0, len(got))) and len(got) >= len(batches), f"replay from 0: {[s for s, _ in got]}")
    check([as_map(e)["type"] for e in got[0][1][1]] == ["AllBlocksCleared"], f"batch 0 is AllBlocksCleared: {got[0]}")
    check([p for s, p in got if s >= seqs[0]][0][1] == batches[0][2], "replayed batches are the published ones")
    got_tail, ended = replay(ctx, replay_port, seqs[-1])
    check(ended and [s for s, _ in got_tail] == [seqs[-1]], "replay from the last sequence number gives one batch")
    # The event stream as a router's index sees it.
    live, stored_tokens, removed = set(), {}, 0
    for seq, payload in got:
        for e in map(as_map, payload[1]):
            if e["type"] == "BlockStored":
                hs = e["block_hashes"]
                check(all(isinstance(h, int) and 0 < h < 2**64 for h in hs), "64-bit non-zero hashes")
                check(e["parent_block_hash"] is None or e["parent_block_hash"] in live,
                      f"a parent is announced before its child (seq {seq})")
                check(e["block_size"] == BLOCK and len(e["token_ids"]) == BLOCK * len(hs), "block_size tokens per hash")
                check(e["medium"] == "CPU" and e["lora_id"] is None, "medium and lora_id")
                for k, h in enumerate(hs):
                    check(h not in live, "a hash is stored once while live")
                    live.add(h)
                    stored_tokens[h] = e["token_ids"][k * BLOCK:(k + 1) * BLOCK]
            elif e["type"] == "BlockRemoved":
                for h in e["block_hashes"]:
                    check(h in live, f"removed only after stored (seq {seq})")
                    live.discard(h)
                    removed += 1
    check(removed > 0, f"a pool of 40 blocks for 20 prompts of 3 full blocks evicts: {removed} removed")
    firsts = {tuple(t) for t in stored_tokens.values()}
    check(all(tuple(p[0:BLOCK]) in firsts for p in prompts), "each prompt's first block's tokens are announced")
    # The repeated prompt found its blocks (or re-stored evicted ones): never a duplicate live hash (checked above).
    metrics = urllib.request.urlopen(url + "/metrics").read().decode()
    m = re.search(r"^pagoda:kv_events_published_batches_total\{[^}]*\} (\d+)$", metrics, re.M)
    check(m and int(m.group(1)) == len(got), f"/metrics counts the published batches: {m and m.group(1)} vs {len(got)}")
finally:
    proc.terminate()
    proc.wait(timeout=30)

# 2. Tenants and the legacy form.
keys = tempfile.NamedTemporaryFile("w", suffix=".keys", delete=False)
keys.write("alice key-a\nbob key-b\n")
keys.close()
pub_port = free_port()
proc, url = start(["--api-keys-file", keys.name], {"enable_kv_cache_events": True, "endpoint": f"tcp://*:{pub_port}",
                                                   "event_form": "array"})
try:
    sub = Subscriber(ctx, pub_port, "")
    prompt = [20 + j for j in range(40)]
    post(url, "/v1/completions", {"prompt": prompt, "max_tokens": 1}, key="key-a")
    post(url, "/v1/completions", {"prompt": prompt, "max_tokens": 1}, key="key-b")
    batches = sub.drain()
    events = [e for b in batches for e in b[2]]
    check(all(isinstance(e, list) for e in events), f"the legacy form is positional: {events[:1]}")
    stored = [as_map(e) for e in events if e[0] == "BlockStored"]
    firsts = [s["block_hashes"][0] for s in stored if s["parent_block_hash"] is None]
    check(len(firsts) == 2 and firsts[0] != firsts[1], f"two tenants, two first-block hashes: {firsts}")
finally:
    proc.terminate()
    proc.wait(timeout=30)
    os.unlink(keys.name)

# 3. A bad configuration is one clear error.
r = subprocess.run([pagoda, "serve", model, "--port", "0", "--kv-events-config", '{"enable_kv_cache_events": true, "hwm": "x"}'],
                   capture_output=True, text=True, timeout=30)
check(r.returncode != 0 and "'hwm'" in r.stderr, f"a bad field is named: {r.stderr.strip()[-200:]}")

print(f"kv events: {passed} checks passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
