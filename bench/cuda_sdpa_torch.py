#!/usr/bin/env python3
"""The peer of bench/cuda_paged_attention.cu: PyTorch's scaled_dot_product_attention on the same decode shapes, with
K/V contiguous ([seqs, kv_heads, context, head_dim], no block table), so its bytes/s can be set beside the paged
kernel's. Same sizes (2^19 keys in all), same timing (CUDA events around each call, 5 warm-ups, median of 20).

Usage: python3 bench/cuda_sdpa_torch.py [--json FILE] [--reps N] [--total-keys N]
Runs where PyTorch with CUDA is installed (the device machine's image); not a test.
"""
import argparse
import json
import math
import statistics

import torch
import torch.nn.functional as F

CASES = [("llama-8b", 32, 8, 128, torch.float16), ("llama-8b", 32, 8, 128, torch.bfloat16),
         ("smollm2-135m", 9, 3, 64, torch.float16)]
CONTEXTS = [1024, 2048, 4096, 8192, 16384, 32768]


def median_ms(fn, warm, reps):
    for _ in range(warm):
        fn()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--total-keys", type=int, default=1 << 19)
    args = ap.parse_args()
    out = open(args.json, "w") if args.json else None
    dev = torch.cuda.get_device_name(0)
    print(f"torch {torch.__version__} on {dev}")
    print(f"{'shape':14} {'kv':5} {'context':>7} {'seqs':>6} {'time_us':>10} {'KV GB/s':>10}  form")
    for model, hq, hkv, d, dt in CASES:
        for ctx in CONTEXTS:
            b = max(1, args.total_keys // ctx)
            torch.manual_seed(ctx)
            q = torch.rand(b, hq, 1, d, device="cuda", dtype=dt) * 2 - 1
            k = torch.rand(b, hkv, ctx, d, device="cuda", dtype=dt) * 2 - 1
            v = torch.rand(b, hkv, ctx, d, device="cuda", dtype=dt) * 2 - 1
            scale = 1.0 / math.sqrt(d)
            form = "enable_gqa"
            try:
                fn = lambda: F.scaled_dot_product_attention(q, k, v, scale=scale, enable_gqa=True)  # noqa: E731
                fn()
            except (TypeError, RuntimeError):
                # Older PyTorch: K/V heads repeated for the query heads (more bytes read than counted below).
                ke, ve = k.repeat_interleave(hq // hkv, 1), v.repeat_interleave(hq // hkv, 1)
                fn = lambda: F.scaled_dot_product_attention(q, ke, ve, scale=scale)  # noqa: E731
                form = "repeated"
            ms = median_ms(fn, 5, args.reps)
            kv_bytes = 2 * b * ctx * hkv * d * 2
            gbs = kv_bytes / (ms * 1e6)
            kv = "bf16" if dt == torch.bfloat16 else "f16"
            print(f"{model:14} {kv:5} {ctx:7d} {b:6d} {ms * 1e3:10.1f} {gbs:10.0f}  {form}")
            if out:
                out.write(json.dumps({"kind": "torch_sdpa", "device": dev, "torch": torch.__version__,
                                      "shape": model, "n_heads": hq, "n_kv_heads": hkv, "head_dim": d, "kv": kv,
                                      "context": ctx, "seqs": b, "median_ms": ms, "kv_bytes": kv_bytes,
                                      "kv_gbs": gbs, "form": form, "reps": args.reps}) + "\n")
            del q, k, v
            torch.cuda.empty_cache()
    if out:
        out.close()


if __name__ == "__main__":
    main()
