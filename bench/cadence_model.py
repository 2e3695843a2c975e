#!/usr/bin/env python3
"""The verification-cadence model of docs/anchor-benchmark.md 4.14, fitted to `pagoda bench anchors --cadence`.

    slowdown = 1 + checks_per_step * t_check(A) / t_step

  t_check(A)      one re-check (Ed25519 verify + SHA-256 of the anchor's K/V), fitted per instruction set as
                  c0 + c1 * A over every cell that ran re-checks (A = anchor tokens; least squares);
  t_step          one decode step at cadence `session` (no re-checks) of the same A and C: C / decode tok/s;
  checks_per_step re-checks / decode steps, decode steps = (requests / C) * generated tokens per request.

Prints, per cell, the measured slowdown (session decode tok/s / cadence decode tok/s) beside the prediction, the
fitted constants per instruction set, and the model's prediction for a GPU decode step from the assumptions below
(on paper: no GPU was measured).
Usage: bench/cadence_model.py CADENCE.jsonl [MORE.jsonl ...]   (JSON lines of `bench anchors --format json`)
"""
import json
import sys
from collections import defaultdict


def load(paths):
    cells = []
    for path in paths:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                j = json.loads(line)
                if j.get("kind") == "cadence":
                    cells.append(j)
    return cells


def fit_line(points):
    """Least squares y = c0 + c1 x."""
    n = len(points)
    sx = sum(x for x, _ in points)
    sy = sum(y for _, y in points)
    sxx = sum(x * x for x, _ in points)
    sxy = sum(x * y for x, y in points)
    den = n * sxx - sx * sx
    if n < 2 or den == 0:
        return (sy / n if n else 0.0), 0.0
    c1 = (n * sxy - sx * sy) / den
    return (sy - c1 * sx) / n, c1


def main(paths):
    cells = load(paths)
    if not cells:
        sys.exit("no cadence cells in " + ", ".join(paths))
    by_isa = defaultdict(list)
    for c in cells:
        by_isa[(c["model"], c["isa"])].append(c)
    print("| model | ISA | A | C | cadence | checks/step | t_check (ms) | t_step (ms) | slowdown measured | predicted |")
    print("|---|---|---:|---:|---|---:|---:|---:|---:|---:|")
    constants = {}
    for (model, isa), cs in sorted(by_isa.items()):
        pts = [(c["anchor_tokens"], c["recheck_seconds"] / c["rechecks"]) for c in cs if c.get("rechecks", 0) > 0]
        c0, c1 = fit_line(pts)
        constants[(model, isa)] = (c0, c1)
        session = {(c["anchor_tokens"], c["concurrency"]): c for c in cs if c["cadence"] == "session"}
        for c in sorted(cs, key=lambda c: (c["anchor_tokens"], c["concurrency"], c["cadence"])):
            base = session.get((c["anchor_tokens"], c["concurrency"]))
            if base is None or c["decode_tok_s"] <= 0:
                continue
            C = c["concurrency"]
            t_step = C / base["decode_tok_s"]
            steps = c["requests"] / C * c["gen_tokens"]
            per_step = c.get("rechecks", 0) / steps if steps else 0.0
            t_check = c0 + c1 * c["anchor_tokens"]
            predicted = 1 + per_step * t_check / t_step
            measured = base["decode_tok_s"] / c["decode_tok_s"]
            print(f"| {model.split('/')[-1]} | {isa} | {c['anchor_tokens']} | {C} | {c['cadence']} | {per_step:.3f} | "
                  f"{1e3 * t_check:.3f} | {1e3 * t_step:.3f} | {measured:.2f}x | {predicted:.2f}x |")
    print()
    for (model, isa), (c0, c1) in sorted(constants.items()):
        print(f"{model.split('/')[-1]} {isa}: t_check(A) = {1e3 * c0:.4f} ms + {1e6 * c1:.3f} us x A")
    # On paper: a 1B-class Llama (16 layers, 8 KV heads of 64, F16 K/V) on an H100 SXM (3.35 TB/s HBM3), decode
    # bound by streaming 2.5 GB of F16 weights per step at 80% of peak; the re-check on the host: copying the anchor's
    # K/V over PCIe 5 (about 50 GB/s) and hashing it at the 1.65 GB/s SHA-NI rate measured here, plus 0.05 ms of
    # Ed25519 verification.
    weights_gb, hbm_tbs, efficiency = 2.5, 3.35, 0.8
    t_step_gpu = weights_gb / (hbm_tbs * 1e3 * efficiency)
    kv_bytes_per_token = 16 * 8 * 64 * 2 * 2
    print("\nGPU decode step (on paper, assumptions in the source): t_step = %.3f ms" % (1e3 * t_step_gpu))
    print("| A | C | cadence | checks/step | t_check (ms) | predicted slowdown |")
    print("|---:|---:|---|---:|---:|---:|")
    for A in (128, 512, 4096):
        t_check = 5e-5 + A * kv_bytes_per_token / 50e9 + A * kv_bytes_per_token / 1.65e9
        for C in (1, 16, 64):
            for cadence, per_step in (("session", 0.0), ("step", 1.0), ("block", C / 16), ("token", float(C))):
                print(f"| {A} | {C} | {cadence} | {per_step:g} | {1e3 * t_check:.3f} | "
                      f"{1 + per_step * t_check / t_step_gpu:.1f}x |")


if __name__ == "__main__":
    main(sys.argv[1:])
