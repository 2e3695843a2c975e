"""One tenant floods long prompts while another sends short chats: does the short tenant keep its latency?

    /usr/bin/python3 bench/tenant_fairness.py --pagoda build/pagoda --model M.gguf \
        [--rounds 3] [--a-requests 16] [--a-prompt-tokens 1024] [--b-requests 24] [--b-rate 4] \
        [--policies fair,fcfs] [--out bench/results/tenant_fairness.json] [--check]

Tenant A sends --a-requests prompts of --a-prompt-tokens random token ids at once (32 tokens out each; a 429 is
retried after its Retry-After, as a client should). Tenant B sends --b-requests prompts of 48 random token ids
(16 tokens out, streamed) as a Poisson process at --b-rate per second, starting 0.5 s after A's flood. "alone" runs
B's schedule (the same seed) with no A. Distinct random prompts: the prefix cache helps nobody.
Policies (each a fresh server per run):
  fair  A limited in the API keys file (max_running=--fair-max-running, default 2; max_waiting=4),
        --long-prefill-token-threshold --fair-threshold (default 64), the default aging horizon;
  fcfs  no limits, no threshold, --aging-horizon 0.001: every waiting request is due at once, so admission is
        first come first served with the head holding the pool, as before tenant sharing.
Per run: B's TTFT p50/p99 (first streamed token), A's completions, 429s and slowest request. Rounds interleave
the policies and the alone/flood runs; the result per policy is the median over rounds of B's TTFT p99 under the
flood divided by B's TTFT p99 alone (target: at most 2).
--check: small sizes and loose bounds, for ctest: fails when, under fair, B's ratio is over 5, a request of B fails,
or a request of A does not complete within 180 s.
"""

import argparse
import http.client
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "fleet"))
from fleet import Replica  # noqa: E402

def policies(args):
    """The server flags and API keys file of each policy."""
    return {
        "fair": (["--long-prefill-token-threshold", str(args.fair_threshold)],
                 f"a key-a max_running={args.fair_max_running} max_waiting=4\nb key-b\n"),
        "fcfs": (["--aging-horizon", "0.001"], "a key-a\nb key-b\n"),
    }


def completion(port, key, prompt, max_tokens, stream):
    """POST /v1/completions; returns (status, seconds to the first token or None, seconds in all, retry_after)."""
    body = json.dumps({"model": "smollm2", "prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
                       "ignore_eos": True, "stream": stream})
    t0 = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("POST", "/v1/completions", body, {"content-type": "application/json",
                                                   "authorization": f"Bearer {key}"})
    r = conn.getresponse()
    first = None
    if r.status != 200:
        r.read()
        conn.close()
        return r.status, None, time.monotonic() - t0, r.getheader("retry-after")
    if stream:
        for raw in r:
            line = raw.decode().strip()
            if line.startswith("data: {") and first is None and '"text":""' not in line.replace(" ", ""):
                first = time.monotonic() - t0
            if line == "data: [DONE]":
                break
    else:
        json.loads(r.read())
        first = time.monotonic() - t0
    conn.close()
    return 200, first, time.monotonic() - t0, None


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def run(args, policy, flood, seed, workdir):
    extra, keys = policies(args)[policy]
    keys_file = os.path.join(workdir, f"keys-{policy}")
    with open(keys_file, "w") as f:
        f.write(keys)
    server = Replica(f"fair-{policy}", args.pagoda, args.model, workdir, threads=args.threads,
                     extra_args=["--api-keys-file", keys_file, "--kv-cache-mem", "1GiB"] + extra)
    rng = random.Random(seed)
    a_prompts = [[rng.randrange(1000, 40000) for _ in range(args.a_prompt_tokens)] for _ in range(args.a_requests)]
    b_prompts = [[rng.randrange(1000, 40000) for _ in range(48)] for _ in range(args.b_requests)]
    b_gaps = [rng.expovariate(args.b_rate) for _ in range(args.b_requests)]
    a_results, b_results, lock = [], [], threading.Lock()

    def a_client(prompt):
        t0, refused = time.monotonic(), 0
        while True:
            status, _, _, retry = completion(server.port, "key-a", prompt, 32, False)
            if status != 429:
                break
            refused += 1
            time.sleep(float(retry or 1))
        with lock:
            a_results.append({"status": status, "seconds": time.monotonic() - t0, "refused": refused})

    def b_client(prompt):
        status, ttft, total, _ = completion(server.port, "key-b", prompt, 16, True)
        with lock:
            b_results.append({"status": status, "ttft": ttft, "seconds": total})

    try:
        server.start().wait_ready()
        completion(server.port, "key-b", [1000, 1001, 1002], 4, True)  # warm-up
        threads = []
        start = time.monotonic()
        if flood:
            for p in a_prompts:
                threads.append(threading.Thread(target=a_client, args=(p,)))
                threads[-1].start()
        time.sleep(0.5)
        for p, gap in zip(b_prompts, b_gaps):
            time.sleep(gap)
            threads.append(threading.Thread(target=b_client, args=(p,)))
            threads[-1].start()
        for t in threads:
            t.join()
        wall = time.monotonic() - start
    finally:
        server.stop()
    b_ok = [r["ttft"] for r in b_results if r["status"] == 200 and r["ttft"] is not None]
    out = {"policy": policy, "flood": flood, "seed": seed, "wall_s": wall,
           "b_completed": len(b_ok), "b_failed": len(b_results) - len(b_ok),
           "b_ttft_p50_ms": 1000 * percentile(b_ok, 0.5), "b_ttft_p99_ms": 1000 * percentile(b_ok, 0.99),
           "b_ttft_max_ms": 1000 * max(b_ok)}
    if flood:
        out.update({"a_completed": sum(r["status"] == 200 for r in a_results), "a_sent": len(a_prompts),
                    "a_429": sum(r["refused"] for r in a_results),
                    "a_slowest_s": max(r["seconds"] for r in a_results)})
    print(json.dumps(out), flush=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pagoda", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--a-requests", type=int, default=16)
    ap.add_argument("--a-prompt-tokens", type=int, default=1024)
    ap.add_argument("--b-requests", type=int, default=24)
    ap.add_argument("--b-rate", type=float, default=4.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--policies", default="fair,fcfs")
    ap.add_argument("--fair-threshold", type=int, default=64, help="fair: --long-prefill-token-threshold")
    ap.add_argument("--fair-max-running", type=int, default=2, help="fair: tenant A's max_running")
    ap.add_argument("--out")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    if args.check:
        args.rounds, args.a_requests, args.a_prompt_tokens, args.b_requests = 1, 6, 512, 12
        args.policies = "fair"
    policies = args.policies.split(",")
    runs = []
    with tempfile.TemporaryDirectory() as workdir:
        for rnd in range(args.rounds):
            order = policies if rnd % 2 == 0 else policies[::-1]
            for policy in order:
                for flood in ([False, True] if rnd % 2 == 0 else [True, False]):
                    runs.append(run(args, policy, flood, 1000 + rnd, workdir))
    summary = {}
    for policy in policies:
        ratios = []
        for rnd in range(args.rounds):
            seed = 1000 + rnd
            alone = next(r for r in runs if r["policy"] == policy and not r["flood"] and r["seed"] == seed)
            flood = next(r for r in runs if r["policy"] == policy and r["flood"] and r["seed"] == seed)
            ratios.append(flood["b_ttft_p99_ms"] / alone["b_ttft_p99_ms"])
        floods = [r for r in runs if r["policy"] == policy and r["flood"]]
        summary[policy] = {"b_ttft_p99_ratio_median": statistics.median(ratios), "b_ttft_p99_ratios": ratios,
                           "a_completed_all": all(r["a_completed"] == r["a_sent"] for r in floods),
                           "a_slowest_s_max": max(r["a_slowest_s"] for r in floods)}
    print(json.dumps({"summary": summary}, indent=1))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"args": vars(args), "runs": runs, "summary": summary}, f, indent=1)
    if args.check:
        s = summary["fair"]
        b_failed = sum(r["b_failed"] for r in runs)
        if not s["a_completed_all"] or s["b_ttft_p99_ratio_median"] > 5 or b_failed or s["a_slowest_s_max"] > 180:
            print(f"tenant fairness check failed: {s}", file=sys.stderr)
            return 1
        print("tenant fairness check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
