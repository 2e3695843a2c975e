#!/usr/bin/env python3
"""Goodput table of `pagoda bench anchors --request-rates ... --format json` (docs/anchor-benchmark.md, 4.13):
per mode and rate, the rounds' values (median first) of goodput, TTFT p50/p99 and ITL p99."""
import json
import statistics
import sys
from collections import defaultdict


def main():
    cells = defaultdict(list)
    for line in open(sys.argv[1]):
        j = json.loads(line)
        if j.get("kind") == "arrivals":
            cells[(j["request_rate"], j["mode"])].append(j)
    first = next(iter(cells.values()))[0]
    print(f"SLO: TTFT <= {first['slo_ttft_ms']:.0f} ms and the request's own ITL p99 <= {first['slo_itl_ms']:.0f} ms; "
          f"A = {max(c[0]['anchor_tokens'] for c in cells.values())}, T = {first['context_tokens']}, "
          f"{first['gen_tokens']} generated, {first['requests']} requests per cell\n")
    print("| rate (req/s) | mode | goodput req/s: median (rounds) | good / requests | TTFT p50 ms (median) | "
          "TTFT p99 ms (median) | ITL p99 ms (median) | output tok/s (median) |")
    print("|---:|---|---|---|---:|---:|---:|---:|")
    for (rate, mode), rs in sorted(cells.items(), key=lambda kv: (kv[0][0], kv[1][0]["round"])):
        med = lambda k: statistics.median(r[k] for r in rs)
        rounds = ", ".join(f"{r['goodput_req_s']:.2f}" for r in sorted(rs, key=lambda r: r["round"]))
        good = " ".join(f"{r['good']}/{r['requests']}" for r in sorted(rs, key=lambda r: r["round"]))
        print(f"| {rate:g} | {mode} | {med('goodput_req_s'):.2f} ({rounds}) | {good} | {med('ttft_p50_ms'):.0f} | "
              f"{med('ttft_p99_ms'):.0f} | {med('itl_p99_ms'):.0f} | {med('output_tok_s'):.1f} |")


if __name__ == "__main__":
    main()
