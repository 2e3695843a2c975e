#!/usr/bin/env python3
"""Tables of docs/warm-start.md 5.6-5.8 from one `pagoda warmstart eval --task qa --out DIR` folder (its
summary.json and requests.jsonl, committed under bench/results/).

Usage: bench/warmstart_qa_table.py DIR [DIR ...]
"""
import json
import math
import sys

Z = 1.959963984540054


def wilson(hits, n):
    if n == 0:
        return 0.0, 0.0, 0.0
    p = hits / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return p, max(0.0, centre - half), min(1.0, centre + half)


def pct(x):
    return f"{100 * x:.1f}%"


def table(folder):
    s = json.load(open(f"{folder}/summary.json"))
    reqs = [json.loads(l) for l in open(f"{folder}/requests.jsonl") if l.strip()]
    print(f"### {s['model'].split('/')[-1]}, distractors: {s['distractors']} ({len(reqs)} requests, library "
          f"{s['library']['entries']} entries)\n")
    cold = s["cold_answer_accuracy"]
    print(f"Cold answer accuracy: {pct(cold['rate'])} [{pct(cold['low'])}, {pct(cold['high'])}]; nearest neighbour: "
          + ", ".join(f"{k} {v}" for k, v in s["nearest_neighbour_kind"].items()) + "\n")
    print("| method | KL(m‖c) mean / median / p90 | top-1 | answer accuracy [95% CI] | drop vs cold [95% CI] | "
          "TTFT median (ms) | TTFT cut |")
    print("|---|---|---:|---|---|---:|---:|")
    for name, m in s["methods"].items():
        a = m["all"]
        kl = a["kl_method_cold"]
        acc = a.get("answer_accuracy")
        drop = a.get("accuracy_drop_vs_cold")
        acc_s = f"{pct(acc['rate'])} [{pct(acc['low'])}, {pct(acc['high'])}]" if acc else "-"
        drop_s = f"{100 * drop['difference']:+.1f} [{100 * drop['low']:+.1f}, {100 * drop['high']:+.1f}]" if drop else "-"
        print(f"| {name} | {kl['mean']:.3f} / {kl['median']:.3f} / {kl['p90']:.3f} | {a['top1_agreement']:.3f} | "
              f"{acc_s} | {drop_s} | {a['ttft_ms_median']:.2f} | {pct(a['ttft_reduction_mean'])} |")
    print()
    # Threshold sweep: what `served` (shared projector on a hit, cold on a miss) would answer at each tau.
    first = next(n for n in s["methods"] if n.startswith("projected:"))
    # A false hit: the neighbour's prompt has another answer (a near miss or an unrelated prompt, or the source of a
    # near-miss pair, which is its target's near miss by construction).
    def false_hit(r):
        return r["neighbour_kind"] != "own-source" or r["adversarial"]

    print(f"| tau | hits | of which false (another answer) | served accuracy ({first} on a hit, cold on a miss) [95% CI] |")
    print("|---:|---:|---:|---|")
    for tau in (0.9, 0.99, 0.995, 0.998, 0.999, 0.9995, 0.9999, 1.0):
        hits = [r for r in reqs if r["similarity"] >= tau]
        near = sum(false_hit(r) for r in hits)
        right = sum((r["methods"][first]["correct"] if r["similarity"] >= tau else r["cold_correct"]) for r in reqs)
        p, lo, hi = wilson(right, len(reqs))
        print(f"| {tau:g} | {len(hits)} | {near} | {pct(p)} [{pct(lo)}, {pct(hi)}] |")
    print()
    sims = sorted(r["similarity"] for r in reqs)
    by_kind = {}
    for r in reqs:
        by_kind.setdefault(r["neighbour_kind"], []).append(r["similarity"])
    print("Nearest-neighbour cosine: " + "; ".join(
        f"{k}: {min(v):.4f} .. {max(v):.4f}" for k, v in sorted(by_kind.items())) + "\n")
    print("| form | TTFT cut > 40% | mean KL <= 0.05 | answer-accuracy drop <= 1 point [95% CI] |")
    print("|---|---|---|---|")
    for form, c in s.get("criteria", {}).items():
        q = c["quality_drop_le_1pct"]
        ci = f" [{100 * q['low']:+.1f}, {100 * q['high']:+.1f}]" if "low" in q else ""
        print(f"| {form} | {c['ttft_reduction_gt_40pct']['verdict']} ({pct(c['ttft_reduction_gt_40pct']['value'])}) | "
              f"{c['mean_kl_le_0.05']['verdict']} ({c['mean_kl_le_0.05']['value']:.3f}) | "
              f"{q['verdict']} ({100 * q['value']:+.1f}{ci}) |")
    print()


if __name__ == "__main__":
    for folder in sys.argv[1:]:
        table(folder)
