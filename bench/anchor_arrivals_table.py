#!/usr/bin/env python3
"""Goodput table of `pagoda bench anchors --request-rates ... --format json` (docs/anchor-benchmark.md, 4.13 and
4.15): per mode (anchor-layers with its mask) and rate, the rounds' values (median first) of goodput, TTFT p50/p99
and ITL p99; with eviction traffic (--unrelated-share), also the prompt tokens the mode's requests found cached, the
share of them that found the whole text cached, preemptions and the unrelated requests' TTFT p50. Several files may
be given (one per anchor-layers mask)."""
import json
import statistics
import sys
from collections import defaultdict


def main():
    cells = defaultdict(list)
    for path in sys.argv[1:]:
        for line in open(path):
            j = json.loads(line)
            if j.get("kind") == "arrivals":
                mode = j["mode"] + (f" {j['anchor_layers']}" if j.get("anchor_layers") else "")
                cells[(j["request_rate"], mode)].append(j)
    first = next(iter(cells.values()))[0]
    eviction = first.get("unrelated_share", 0) > 0
    print(f"SLO: TTFT <= {first['slo_ttft_ms']:.0f} ms and the request's own ITL p99 <= {first['slo_itl_ms']:.0f} ms; "
          f"A = {max(c[0]['anchor_tokens'] for c in cells.values())}, T = {first['context_tokens']}, "
          f"{first['gen_tokens']} generated, {first['requests']} requests per cell" +
          (f", plus {first['unrelated_requests']} unrelated ({first['unrelated_share']:g} of the arrivals), "
           f"pool {first['kv_cache_mem']}" if eviction else "") + "\n")
    extra_head = " cached prompt tokens (mean) | text fully cached | preemptions | unrelated TTFT p50 ms |" if eviction else ""
    print("| rate (req/s) | mode | goodput req/s: median (rounds) | good / requests | TTFT p50 ms (median) | "
          "TTFT p99 ms (median) | ITL p99 ms (median) | output tok/s (median) |" + extra_head)
    print("|---:|---|---|---|---:|---:|---:|---:|" + ("---:|---:|---:|---:|" if eviction else ""))
    for (rate, mode), rs in sorted(cells.items(), key=lambda kv: (kv[0][0], kv[1][0]["round"])):
        med = lambda k: statistics.median(r[k] for r in rs)
        rounds = ", ".join(f"{r['goodput_req_s']:.2f}" for r in sorted(rs, key=lambda r: r["round"]))
        good = " ".join(f"{r['good']}/{r['requests']}" for r in sorted(rs, key=lambda r: r["round"]))
        extra = ""
        if eviction:
            extra = (f" {med('cached_prompt_tokens_mean'):.0f} | {100 * med('text_fully_cached_share'):.0f}% | "
                     f"{med('preemptions'):.0f} | {med('unrelated_ttft_p50_ms'):.0f} |")
        print(f"| {rate:g} | {mode} | {med('goodput_req_s'):.2f} ({rounds}) | {good} | {med('ttft_p50_ms'):.0f} | "
              f"{med('ttft_p99_ms'):.0f} | {med('itl_p99_ms'):.0f} | {med('output_tok_s'):.1f} |" + extra)


if __name__ == "__main__":
    main()
