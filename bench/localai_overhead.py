"""What the gRPC hop costs: pagoda-localai (LocalAI's backend protocol) against `pagoda serve` (OpenAI HTTP), same
model, same engine settings, same load, interleaved rounds.

    /usr/bin/python3 bench/localai_overhead.py build/pagoda-localai build/pagoda MODEL.gguf [--rounds 3]

Both servers run side by side (idle while the other is measured) with 2 threads, a 256 MiB KV pool and a 2048-token
context. Each round measures each server in turn (the order alternating) at concurrency 1 (8 requests) and 16 (32
requests): streamed requests of a ~64-token text prompt, unique per request and round (so neither server's prefix
cache helps), temperature 0, exactly 32 output tokens (IgnoreEOS / ignore_eos). The same Python client code drives
both (threads; gRPC stubs generated from proto/localai/backend.proto, HTTP streamed /v1/completions read as SSE), so
client costs match. Reports per round and as medians: output tokens per second (all requests' output tokens over
the wall time of the batch) and TTFT (median over requests, ms). Run with Debian's /usr/bin/python3 (python3-grpcio).
"""

import argparse
import concurrent.futures
import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time

OUTPUT_TOKENS = 32
WORDS = ("river stone garden lamp window bridge cloud paper music silver forest candle engine harbor letter "
         "mountain orange pocket school winter yellow basket castle dragon finger island jacket kitten ladder "
         "mirror needle pillow rocket saddle tunnel violin wagon").split()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prompt_for(seed):
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(60))


class GrpcSide:
    name = "gRPC (pagoda-localai)"

    def __init__(self, binary, model, tmp):
        src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "proto", "localai")
        subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I", src, f"--python_out={tmp}",
                        f"--grpc_python_out={tmp}", "backend.proto"], check=True)
        sys.path.insert(0, tmp)
        import grpc
        import backend_pb2
        import backend_pb2_grpc
        self.pb = backend_pb2
        port = free_port()
        self.proc = subprocess.Popen([binary, "--addr", f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(tmp, "localai.log"), "w"))
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(self.channel).result(timeout=30)
        self.stub = backend_pb2_grpc.BackendStub(self.channel)
        r = self.stub.LoadModel(backend_pb2.ModelOptions(Model="m", ModelFile=model, ContextSize=2048, Threads=2,
                                                         Options=["kv-cache-mem:256MiB"]), timeout=300)
        if not r.success:
            raise SystemExit(f"LoadModel: {r.message}")

    def request(self, prompt):
        start = time.perf_counter()
        ttft = None
        tokens = 0
        for reply in self.stub.PredictStream(self.pb.PredictOptions(Prompt=prompt, Tokens=OUTPUT_TOKENS, Temperature=0,
                                                                    IgnoreEOS=True), timeout=600):
            if reply.message and ttft is None:
                ttft = time.perf_counter() - start
            tokens = reply.tokens
        return ttft, tokens

    def stop(self):
        self.channel.close()
        self.proc.terminate()
        self.proc.wait(timeout=30)


class HttpSide:
    name = "HTTP (pagoda serve)"

    def __init__(self, binary, model, tmp):
        self.port = free_port()
        self.proc = subprocess.Popen([binary, "serve", model, "--port", str(self.port), "--threads", "2",
                                      "--kv-cache-mem", "256MiB", "--max-model-len", "2048", "--served-model-name", "m"],
                                     stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "serve.log"), "w"))
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                c.request("GET", "/health")
                if c.getresponse().status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise SystemExit("pagoda serve did not become ready")

    def request(self, prompt):
        body = json.dumps({"model": "m", "prompt": prompt, "max_tokens": OUTPUT_TOKENS, "temperature": 0,
                           "ignore_eos": True, "stream": True, "stream_options": {"include_usage": True}})
        start = time.perf_counter()
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        c.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
        r = c.getresponse()
        ttft = None
        tokens = 0
        for line in r:
            if not line.startswith(b"data: ") or line.startswith(b"data: [DONE]"):
                continue
            chunk = json.loads(line[6:])
            if chunk.get("choices") and chunk["choices"][0].get("text") and ttft is None:
                ttft = time.perf_counter() - start
            if chunk.get("usage"):
                tokens = chunk["usage"]["completion_tokens"]
        c.close()
        return ttft, tokens

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def measure(side, concurrency, n, seed):
    prompts = [prompt_for(seed * 1000 + i) for i in range(n)]
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(side.request, prompts))
    wall = time.perf_counter() - start
    tokens = sum(t for _, t in results)
    if tokens != n * OUTPUT_TOKENS:
        raise SystemExit(f"{side.name}: {tokens} output tokens, expected {n * OUTPUT_TOKENS}")
    return tokens / wall, 1000 * statistics.median(t for t, _ in results)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("localai")
    ap.add_argument("pagoda")
    ap.add_argument("model")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="localai-overhead-")
    sides = [GrpcSide(a.localai, a.model, tmp), HttpSide(a.pagoda, a.model, tmp)]
    loads = [(1, 8), (16, 32)]
    results = {(s.name, c): [] for s in sides for c, _ in loads}
    try:
        for s in sides:  # warm-up, unmeasured
            s.request(prompt_for(-1))
        for rnd in range(a.rounds):
            order = sides if rnd % 2 == 0 else sides[::-1]
            for s in order:
                for c, n in loads:
                    tps, ttft = measure(s, c, n, seed=rnd * 10 + c)
                    results[(s.name, c)].append((tps, ttft))
                    print(f"round {rnd + 1} {s.name:24s} c={c:<3d} {tps:7.1f} tok/s  TTFT {ttft:7.1f} ms", flush=True)
    finally:
        for s in sides:
            s.stop()
    print("\n| concurrency | path | output tok/s (median) | TTFT ms (median) |")
    print("|---|---|---|---|")
    for c, _ in loads:
        row = {}
        for s in sides:
            tps = statistics.median(r[0] for r in results[(s.name, c)])
            ttft = statistics.median(r[1] for r in results[(s.name, c)])
            row[s.name] = (tps, ttft)
            print(f"| {c} | {s.name} | {tps:.1f} | {ttft:.1f} |")
        g, h = row[sides[0].name], row[sides[1].name]
        print(f"| {c} | gRPC / HTTP | {g[0] / h[0]:.3f}x | {g[1] / h[1]:.3f}x |")


if __name__ == "__main__":
    main()
