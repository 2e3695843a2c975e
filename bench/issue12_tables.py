#!/usr/bin/env python3
# The rows of docs/PERFORMANCE.md from bench/issue12_campaign.sh's logs. Usage: bench/issue12_tables.py OUT_DIR
import json, re, glob, os, statistics, sys
C = sys.argv[1]  # the campaign's OUT_DIR
models = ['134m-f16', '134m-q8_0', '134m-q4_k_m', '134m-q4_0', '1b-f16', '1b-q8_0', '1b-q4_k_m', '1b-q4_0']
names = {'134m-f16': '134M F16', '134m-q8_0': '134M Q8_0', '134m-q4_k_m': '134M Q4_K_M', '134m-q4_0': '134M Q4_0',
         '1b-f16': '1B F16', '1b-q8_0': '1B Q8_0', '1b-q4_k_m': '1B Q4_K_M', '1b-q4_0': '1B Q4_0'}
def rounds(path):
    out = []
    for line in open(path):
        m = re.match(r'round \d+: pagoda pp ([\d.e+]+) tg ([\d.e+]+) \| llama.cpp pp ([\d.e+]+) tg ([\d.e+]+)', line)
        if m: out.append(tuple(float(x) for x in m.groups()))
    return out
def cell(rs, i, j):
    if not rs: return 'not run'
    p = statistics.median(r[i] for r in rs); l = statistics.median(r[j] for r in rs)
    per = [r[i] / r[j] for r in rs]
    ratio = p / l
    b = '**' if ratio >= 1.0 else ''
    return f'{p:.0f} / {l:.0f} = {b}{ratio:.2f}{b} [{min(per):.2f}-{max(per):.2f}]'
def roof(m, isa):
    f = f'{C}/B-{m}-{isa}.json'
    if not os.path.exists(f) or os.path.getsize(f) == 0: return 'not run'
    j = json.loads(open(f).read().strip().splitlines()[-1])
    lim = j['roofline_limit']
    return (f"{j['decode_tok_s']:.0f}; bw {j['bandwidth_bound_tok_s']:.0f} ({j['read_bandwidth_gb_s']:.1f} GB/s), "
            f"compute {j['compute_bound_tok_s']:.0f}; **{100*j['decode_of_roofline']:.0f}%** of {lim}")
print('| model | AVX-512 prefill pp512 | AVX-512 decode tg128 | AVX2 prefill pp512 | AVX2 decode tg128 |')
print('|---|---:|---:|---:|---:|')
for m in models:
    r5 = rounds(f'{C}/A-{m}-avx512.log') if os.path.exists(f'{C}/A-{m}-avx512.log') else []
    r2 = rounds(f'{C}/A-{m}-avx2.log') if os.path.exists(f'{C}/A-{m}-avx2.log') else []
    print(f'| {names[m]} | {cell(r5,0,2)} | {cell(r5,1,3)} | {cell(r2,0,2)} | {cell(r2,1,3)} |')
print()
print('| model | AVX-512 decode tg128: tok/s; bounds; share | AVX2 |')
print('|---|---|---|')
for m in models:
    print(f'| {names[m]} | {roof(m, "avx512")} | {roof(m, "avx2")} |')
print()
for f in sorted(glob.glob(f'{C}/C-*.log')):
    print(os.path.basename(f)); print(''.join(l for l in open(f) if l.startswith(('round', 'median', 'decode'))))
def rss(path):
    if not os.path.exists(path): return None
    m = re.search(r'Maximum resident set size \(kbytes\): (\d+)', open(path).read())
    return int(m.group(1)) / 1000 if m else None
def pagoda_json(path):  # the last line of a `pagoda bench --format json` run, or {}
    try: return json.loads(open(path).read().strip().splitlines()[-1])
    except Exception: return {}
def llama_decode(path):  # llama-bench's decode tok/s (the n_gen 32 test) in a jsonl file, or None
    if not os.path.exists(path): return None
    return next((j['avg_ts'] for j in map(json.loads, open(path)) if j.get('n_gen') == 32), None)
for isa in ['avx512', 'avx2']:
    for r in [1, 2]:
        p = pagoda_json(f'{C}/D-pagoda-{isa}-{r}.json').get('decode_tok_s')
        if p is None: continue
        ll = ' | '.join(f'llama fa{fa} {llama_decode(f"{C}/D-llama-{isa}-fa{fa}-{r}.jsonl")} rss '
                        f'{rss(f"{C}/D-llama-{isa}-fa{fa}-{r}.time")}' for fa in [0, 1])
        print(f'D 4k {isa} round {r}: pagoda {p} rss {rss(f"{C}/D-pagoda-{isa}-{r}.time")} MB | {ll}')
for isa in ['avx512', 'avx2']:
    f = f'{C}/E-{isa}.log'
    if os.path.exists(f): print(f'E {isa}:'); print(open(f).read()[-1500:])
for isa in ['avx512', 'avx2']:
    p = pagoda_json(f'{C}/F-pagoda-{isa}.json')
    if not p: continue
    ll = ' | '.join(f'llama fa{fa} {llama_decode(f"{C}/F-llama-{isa}-fa{fa}.jsonl")} rss '
                    f'{rss(f"{C}/F-llama-{isa}-fa{fa}.time")}' for fa in [0, 1])
    print(f'F 16k {isa}: pagoda decode {p.get("decode_tok_s")} prefill {p.get("prefill_tok_s")} '
          f'rss {rss(f"{C}/F-pagoda-{isa}.time")} | {ll}')
