#!/usr/bin/python3
# Markdown tables from `pagoda bench anchors --format json` output (docs/anchor-benchmark.md is written from these).
# Usage: bench/anchor_tables.py RESULTS.jsonl [...]
import json, sys
from collections import defaultdict

rows = defaultdict(list)
for path in sys.argv[1:]:
    for line in open(path):
        line = line.strip()
        if line.startswith("{"):
            o = json.loads(line)
            rows[o["kind"]].append(o)

def f(x, nd=1):
    return f"{x:.{nd}f}"

http = [c for c in rows["cell"] if c.get("transport") == "http"]
rows["cell"] = [c for c in rows["cell"] if c.get("transport") != "http"]
if http:
    # Through HTTP (--base-url, --peer-url): no engine-side KV accounting; prefix hits from pagoda's /metrics.
    print("| server | mode | A | T | C | TTFT p50 / p99 (ms) | ITL p50 / p99 (ms) | E2E p50 / p99 (ms) | decode tok/s | output tok/s | prefix-hit tokens |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for c in http:
        hits = c.get("prefix_hit_tokens", "-") if c["server"] == "pagoda" else "-"
        print(f"| {c['server']} | {c['mode']} | {c['anchor_tokens']} | {c['context_tokens']} | {c['concurrency']} | "
              f"{f(c['ttft_ms']['p50'])} / {f(c['ttft_ms']['p99'])} | {f(c['itl_ms']['p50'],2)} / {f(c['itl_ms']['p99'],1)} | "
              f"{f(c['e2e_ms']['p50'])} / {f(c['e2e_ms']['p99'])} | {f(c['decode_tok_s'])} | {f(c['output_tok_s'])} | {hits} |")
    print()
if rows["cell"]:
    print("| mode | A | T | C | TTFT p50 / p99 (ms) | ITL p50 / p99 (ms) | E2E p50 / p99 (ms) | decode tok/s | output tok/s | KV/request measured (KiB) | formula (KiB) | anchor 2LN_kv d_h A b (KiB) | pinned (KiB) | prefix-hit tokens |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for c in rows["cell"]:
        extra = ""
        if c["mode"] == "rag":
            extra = f" (retrieval p50 {c['retrieval_ms']['p50']:.3f} ms, hit rate {c['retrieval_hit_rate']:.2f})"
        print(f"| {c['mode']}{extra} | {c['anchor_tokens']} | {c['context_tokens']} | {c['concurrency']} | "
              f"{f(c['ttft_ms']['p50'])} / {f(c['ttft_ms']['p99'])} | {f(c['itl_ms']['p50'],2)} / {f(c['itl_ms']['p99'],1)} | "
              f"{f(c['e2e_ms']['p50'])} / {f(c['e2e_ms']['p99'])} | {f(c['decode_tok_s'])} | {f(c['output_tok_s'])} | "
              f"{f(c['kv_bytes_per_request']/1024)} | {f(c['kv_bytes_per_request_formula']/1024)} | "
              f"{f(c['anchor_kv_bytes_formula']/1024)} | {f(c['pinned_bytes']/1024)} | {c['prefix_hit_tokens']} |")
    print()
if rows["cadence"]:
    base = {(c["model"], c["anchor_tokens"], c["concurrency"]): c for c in rows["cadence"] if c["cadence"] == "session"}
    print("| A | C | cadence | decode tok/s | ITL p50 / p99 (ms) | re-checks | re-check time (s) | slowdown vs session (decode tok/s) |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|")
    for c in rows["cadence"]:
        b = base.get((c["model"], c["anchor_tokens"], c["concurrency"]))
        slow = b["decode_tok_s"] / c["decode_tok_s"] if b and c["decode_tok_s"] else float("nan")
        print(f"| {c['anchor_tokens']} | {c['concurrency']} | {c['cadence']} | {f(c['decode_tok_s'])} | "
              f"{f(c['itl_ms']['p50'],2)} / {f(c['itl_ms']['p99'],2)} | {c['rechecks']} | {f(c['recheck_seconds'],3)} | {slow:.2f}x |")
    print()
if rows["capacity"]:
    print("| mode | A | T | gen | pool blocks | pinned blocks | sequences at once (measured) | predicted: full length .. admission |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for c in rows["capacity"]:
        print(f"| {c['mode']} | {c['anchor_tokens']} | {c['context_tokens']} | {c['gen_tokens']} | {c['pool_blocks']} | "
              f"{c['pinned_blocks']} | {c['peak_running']} | {c['predicted']} .. {c.get('predicted_at_admission', '-')} |")
    print()
for kind in ("saturation", "facts", "continuity", "revocation", "drift", "checks"):
    for o in rows[kind]:
        print("    " + json.dumps(o))
if rows["attention"]:
    a = rows["attention"][0]
    L = a["n_layer"]
    print()
    print("| distance from the anchor | queries | " + " | ".join(f"layer {l}" for l in range(L)) + " |")
    print("|---|---:|" + "---:|" * L)
    for b in a["by_distance"]:
        print(f"| {b['distance_from']}-{b['distance_to']} | {b['queries']} | " + " | ".join(f"{m:.3f}" for m in b["mass_per_layer"]) + " |")
