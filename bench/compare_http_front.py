"""What the connection front costs a normal request: two pagoda binaries (before and after it), same server flags,
same load, interleaved rounds.

    /usr/bin/python3 bench/compare_http_front.py OLD_PAGODA NEW_PAGODA MODEL.gguf [--rounds 3]

Each round starts each server in turn (the order alternating) and runs `pagoda bench serve` (the new binary's)
against it: short prompts and outputs (32 prompt tokens, 8 output tokens), so the HTTP path is a large share of
each request, at concurrency 1 and 32, 200 requests each. Reports request throughput and TTFT p50 per round, the
medians, and the ratio new / old.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "fleet"))
from fleet import Replica  # noqa: E402


def run(binary, bench_binary, model, workdir, name):
    rep = Replica(name, binary, model, workdir, served_name="m", threads=2, extra_args=["--kv-cache-mem", "256MiB"])
    try:
        rep.start().wait_ready()
        out = subprocess.run([bench_binary, "bench", "serve", "--base-url", rep.url, "--model", "m",
                              "--concurrency", "1,32", "--num-prompts", "200", "--input-len", "32",
                              "--output-len", "8", "--vocab-size", "500", "--seed", "3", "--format", "json"],
                             capture_output=True, text=True, check=True)
        return {r["concurrency"]: r for r in json.loads(out.stdout)["runs"]}
    finally:
        rep.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("model")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    workdir = tempfile.mkdtemp(prefix="pagoda-front-ab-")
    results = {"old": [], "new": []}
    for rnd in range(args.rounds):
        order = ["old", "new"] if rnd % 2 == 0 else ["new", "old"]
        for which in order:
            res = run(getattr(args, which), args.new, args.model, workdir, f"{which}{rnd}")
            results[which].append(res)
            print(f"round {rnd} {which}: " + "; ".join(
                f"c={c} {r['request_throughput']:.1f} req/s TTFT p50 {r['ttft_ms']['median']:.2f} ms "
                f"failed {r['failed']}" for c, r in sorted(res.items())), flush=True)
    summary = {}
    for c in (1, 32):
        med = {w: {"req_s": statistics.median(r[c]["request_throughput"] for r in results[w]),
                   "ttft_p50_ms": statistics.median(r[c]["ttft_ms"]["median"] for r in results[w])}
               for w in results}
        summary[c] = {**med, "req_s_ratio_new_over_old": med["new"]["req_s"] / med["old"]["req_s"],
                      "ttft_ratio_new_over_old": med["new"]["ttft_p50_ms"] / med["old"]["ttft_p50_ms"]}
        print(f"c={c}: median req/s old {med['old']['req_s']:.1f} new {med['new']['req_s']:.1f} "
              f"(ratio {summary[c]['req_s_ratio_new_over_old']:.3f}); TTFT p50 old {med['old']['ttft_p50_ms']:.2f} "
              f"new {med['new']['ttft_p50_ms']:.2f} ms (ratio {summary[c]['ttft_ratio_new_over_old']:.3f})")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"results": results, "summary": summary}, f, indent=1)


if __name__ == "__main__":
    main()
