#!/usr/bin/env python3
"""Markdown table of a `pagoda bench anchor-memory --format json` result (docs/anchor-benchmark.md, 4.12)."""
import json
import sys


def pc(p):
    if p["n"] == 0:
        return "-"
    return f"{100 * p['rate']:.1f}% [{100 * p['ci95'][0]:.1f}, {100 * p['ci95'][1]:.1f}]"


def main():
    d = json.load(open(sys.argv[1]))
    print("| mode | accuracy | user facts | counterfactual: follows anchor | counterfactual: true fact | "
          "answer log-prob (nats) | retrieved | prompt tokens | TTFT ms | anchor K/V hidden / total (KiB) |")
    print("|---|---|---|---|---|---|---|---:|---:|---:|")
    for m in d["modes"]:
        name = m["mode"] + (" " + m["mask"] if "mask" in m else "")
        lp = m["answer_logprob"]
        kv = "-"
        if "anchor_kv_bytes" in m:
            kv = f"{m['anchor_kv_bytes_hidden'] / 1024:.0f} / {m['anchor_kv_bytes'] / 1024:.0f}"
        print(f"| {name} | {pc(m['accuracy'])} | {pc(m['user_accuracy'])} | {pc(m['counterfactual_follow'])} | "
              f"{pc(m['counterfactual_prior'])} | {lp['mean']:.2f} [{lp['ci95'][0]:.2f}, {lp['ci95'][1]:.2f}] | "
              f"{pc(m['retrieval_hits']) if 'retrieval_hits' in m else '-'} | {m['mean_prompt_tokens']:.0f} | "
              f"{m['ttft_ms_median']:.1f} | {kv} |")
    g = d.get("gate0_anchor_system_equals_text")
    if g:
        print(f"\nGate 0: anchor-system equals text on {g['equal']} of {g['n']} questions (reply and log-probability).")


if __name__ == "__main__":
    main()
