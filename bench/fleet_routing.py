"""Cache-aware vs round-robin routing over three pagoda replicas behind SGLang Model Gateway (smg).

    /usr/bin/python3 bench/fleet_routing.py --pagoda build/pagoda --model M.gguf --smg .cache/fleet/bin/smg \
        [--rounds 3] [--num-blocks 400] [--out bench/results/fleet_routing.json]

The workload is several applications' long system prompts with short user turns: `pagoda bench serve` against
the router's URL with --num-prefixes K shared prefixes of W words, I unique words per prompt, O output tokens,
C requests in flight (text prompts: smg refuses token-id prompts). Each run starts three fresh replicas (empty
caches) and a fresh router with one policy; both policies of a round send the same prompts (same seed); the order
of the policies alternates between rounds. Per run: TTFT p50/p99, output tok/s, each replica's requests and
prefix-cache hit rate (its own /metrics: prompt tokens found cached / looked up), and the requests whose shared
prefix had been sent before but found nothing cached ("repeat misses": routed to a replica that did not hold the
prefix, or held it no longer; usage.prompt_tokens_details.cached_tokens per request).
The result is the ratio round-robin / cache-aware of the TTFT p50, per round and its median.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "fleet"))
from fleet import Replica, SmgRouter, metrics, metric_sum  # noqa: E402


def run_once(args, policy, seed, workdir):
    replicas = [Replica(f"replica-{n}", args.pagoda, args.model, workdir,
                        extra_args=["--num-blocks", str(args.num_blocks)]) for n in "abc"]
    router = None
    try:
        for r in replicas:
            r.start()
        for r in replicas:
            r.wait_ready()
        router = SmgRouter(args.smg, workdir, [r.url for r in replicas], policy).start().wait_ready()
        before = [metrics(r.url) for r in replicas]
        cmd = [args.pagoda, "bench", "serve", "--base-url", router.url, "--model", "smollm2", "--prompt-text",
               "--num-prefixes", str(args.num_prefixes), "--shared-prefix-len", str(args.prefix_words),
               "--input-len", str(args.input_words), "--output-len", str(args.output_len),
               "--num-prompts", str(args.num_prompts), "--concurrency", str(args.concurrency),
               "--vocab-size", "4106", "--seed", str(seed), "--format", "json"]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        if out.returncode != 0:
            raise RuntimeError(f"bench serve failed: {out.stderr.strip()[-500:]}")
        bench = json.loads(out.stdout)["runs"][0]
        after = [metrics(r.url) for r in replicas]
    finally:
        if router:
            router.stop()
        for r in replicas:
            r.stop()
    per_replica = []
    for r, b, a in zip(replicas, before, after):
        def delta(name):
            return metric_sum(a, name) - metric_sum(b, name)
        q, h = delta("pagoda:prefix_cache_queries_total"), delta("pagoda:prefix_cache_hits_total")
        per_replica.append({"replica": r.name, "requests": int(delta("pagoda:request_success_total")),
                            "prompt_tokens": int(q), "hit_tokens": int(h), "hit_rate": h / q if q else None})
    cache = bench["cache"]
    distinct = min(args.num_prefixes, bench["completed"])  # each prefix's first request cannot hit
    repeats = bench["completed"] - distinct
    return {"policy": policy, "seed": seed, "ttft_p50_ms": bench["ttft_ms"]["median"],
            "ttft_p99_ms": bench["ttft_ms"]["p99"], "output_tok_s": bench["output_throughput"],
            "completed": bench["completed"], "failed": bench["failed"],
            "hit_requests": cache["hit_requests"], "cache_reported": cache["reported"],
            "repeat_requests": repeats, "repeat_misses": max(0, repeats - cache["hit_requests"]),
            "hit_rate": (sum(p["hit_tokens"] for p in per_replica) / max(1, sum(p["prompt_tokens"] for p in per_replica))),
            "replicas": per_replica, "bench": bench}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pagoda", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--smg", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--num-blocks", type=int, default=400, help="KV pool of each replica, 16-token blocks")
    ap.add_argument("--num-prefixes", type=int, default=12)
    ap.add_argument("--prefix-words", type=int, default=500)
    ap.add_argument("--input-words", type=int, default=16)
    ap.add_argument("--output-len", type=int, default=16)
    ap.add_argument("--num-prompts", type=int, default=96)
    ap.add_argument("--concurrency", type=int, default=6)
    ap.add_argument("--policies", default="cache_aware,round_robin")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    workdir = tempfile.mkdtemp(prefix="pagoda-fleet-bench-")
    policies = args.policies.split(",")
    runs = []
    for rnd in range(args.rounds):
        order = policies if rnd % 2 == 0 else list(reversed(policies))
        for policy in order:
            t0 = time.monotonic()
            res = run_once(args, policy, seed=1000 + rnd, workdir=workdir)
            res["round"] = rnd
            runs.append(res)
            reps = ", ".join(f"{p['replica'][-1]} {p['requests']} req {100 * (p['hit_rate'] or 0):.0f}%"
                             for p in res["replicas"])
            print(f"round {rnd} {policy:12s} TTFT p50 {res['ttft_p50_ms']:8.1f} ms p99 {res['ttft_p99_ms']:8.1f} ms "
                  f"out {res['output_tok_s']:6.1f} tok/s  hit rate {100 * res['hit_rate']:4.1f}%  "
                  f"repeat misses {res['repeat_misses']}/{res['repeat_requests']}  [{reps}]  "
                  f"({time.monotonic() - t0:.0f} s)", flush=True)
    summary = {}
    for policy in policies:
        mine = [r for r in runs if r["policy"] == policy]
        summary[policy] = {k: statistics.median(r[k] for r in mine)
                           for k in ("ttft_p50_ms", "ttft_p99_ms", "output_tok_s", "hit_rate", "repeat_misses")}
    ratios = []
    if "cache_aware" in policies and "round_robin" in policies:
        for rnd in range(args.rounds):
            by = {r["policy"]: r for r in runs if r["round"] == rnd}
            ratios.append(by["round_robin"]["ttft_p50_ms"] / by["cache_aware"]["ttft_p50_ms"])
        print("TTFT p50 ratio round_robin / cache_aware per round: " + ", ".join(f"{x:.2f}" for x in ratios)
              + f"; median {statistics.median(ratios):.2f}")
    for policy, s in summary.items():
        print(f"median {policy:12s} TTFT p50 {s['ttft_p50_ms']:.1f} ms, p99 {s['ttft_p99_ms']:.1f} ms, "
              f"{s['output_tok_s']:.1f} tok/s, hit rate {100 * s['hit_rate']:.1f}%, repeat misses {s['repeat_misses']}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"config": vars(args), "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                       "runs": runs, "summary": summary, "ttft_p50_ratio_rr_over_ca": ratios}, f, indent=1)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
