// Verified anchors: what activation costs and what an active anchor saves. For anchors of 8, 32, 128 and 512
// tokens on one model: activation (verify + tokenize + pinned prefill, the server's own prefill_ms and the
// client's wall time of the activate call), then the time to the first token of a request that starts from the
// active anchor against the same tokens sent as a plain prompt with prefix caching off (interleaved rounds,
// medians), and the KV bytes per request the anchor's blocks stand in for (2 * L * N_kv * d_h * A * 4, F32 KV).
// Usage: node bench/anchor_bench.mjs PAGODA_BINARY MODEL.gguf [rounds=7] [threads=2]
// Needs no npm package. Writes a Markdown table to stdout and progress to stderr.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const [bin, modelPath, roundsArg, threadsArg] = process.argv.slice(2);
if (!bin || !modelPath) {
  console.error('usage: node bench/anchor_bench.mjs PAGODA_BINARY MODEL.gguf [rounds] [threads]');
  process.exit(2);
}
const rounds = Number(roundsArg ?? 7);
const threads = String(threadsArg ?? 2);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pagoda-anchor-bench-'));
const f = (n) => path.join(dir, n);
const run = (...args) => execFileSync(bin, args, { encoding: 'utf8', maxBuffer: 1 << 26 }).trim();
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

for (const k of ['root', 'signer', 'revoker']) run('anchor', 'keygen', '-o', f(k));
run('anchor', 'root', '--role', `root=${f('root.pub')}`, '--role', `anchor=${f('signer.pub')}`, '--role',
  `revocation=${f('revoker.pub')}`, '--version', '1', '--expires', '+1d', '-o', f('root.json'));
const inspect = run('inspect', modelPath);
const hp = Object.fromEntries([...inspect.matchAll(/(n_layer|n_head_kv|head_dim)=(\d+)/g)].map((m) => [m[1], Number(m[2])]));

const server = spawn(bin, ['serve', modelPath, '--port', '0', '-t', threads, '--kv-cache-mem', '1GiB',
  '--no-enable-prefix-caching', '--anchor-trust-root', f('root.json'), '--admin-api-key', 'adm',
  '--anchor-max-tokens', '600', '--anchor-max-pinned-frac', '0.5'], { stdio: ['ignore', 'ignore', 'pipe'] });
let log = '';
const url = await new Promise((resolve, reject) => {
  server.stderr.on('data', (d) => {
    log += d;
    const m = /serving '.*' on (http:\/\/[0-9.]+:\d+)/.exec(log);
    if (m) resolve(m[1]);
  });
  server.on('exit', () => reject(new Error(log)));
});
const post = async (p, body, key) => {
  const t0 = performance.now();
  const r = await fetch(url + p, { method: 'POST', headers: { Authorization: `Bearer ${key ?? 'x'}`, 'Content-Type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body) });
  const json = await r.json();
  return { status: r.status, json, ms: performance.now() - t0 };
};

const words = ['the', 'little', 'dog', 'ran', 'to', 'a', 'big', 'tree', 'and', 'sun'];
const rows = [];
let version = 1;
for (const target of [8, 32, 128, 512]) {
  // Find a text of exactly `target` tokens (BOS included) by counting with the tokenizer.
  let count = target - 1, text = '', ids = [];
  for (let attempt = 0; attempt < 8; ++attempt) {
    text = Array.from({ length: count }, (_, i) => words[i % words.length]).join(' ');
    ids = JSON.parse(run('tokenize', modelPath, '-p', text, '--no-special', '--format', 'json').split('\n').pop()).ids;
    if (ids.length + 1 === target) break;
    count += target - (ids.length + 1);
  }
  const digest = run('anchor', 'sign', '--key', f('signer.key'), '--model', modelPath, '--lineage', `bench-${target}`,
    '--version', String(version++), '--kind', 'memory', '--scope', '*', '--text', text, '--expires', '+1d',
    '-o', f(`a${target}.json`)).split('\n').pop();
  const reg = await post('/v1/anchors', fs.readFileSync(f(`a${target}.json`), 'utf8'), 'adm');
  if (reg.status !== 201) throw new Error(JSON.stringify(reg.json));
  const act = await post(`/v1/anchors/${digest}/activate`, '', 'adm');
  if (act.status !== 200) throw new Error(JSON.stringify(act.json));
  const bos = 1;
  const tail = [ids[ids.length - 1]];  // one prompt token after the anchor
  const anchored = [], plain = [];
  for (let r = 0; r < rounds + 1; ++r) {  // round 0 warms up
    const a = await post('/v1/completions', { prompt: tail, max_tokens: 1, anchor: digest, temperature: 0 });
    const p = await post('/v1/completions', { prompt: [bos, ...ids, ...tail], max_tokens: 1, temperature: 0 });
    if (a.status !== 200 || p.status !== 200) throw new Error(JSON.stringify([a.json, p.json]));
    if (a.json.choices[0].text !== p.json.choices[0].text) throw new Error('anchored and plain answers differ');
    if (r > 0) { anchored.push(a.ms); plain.push(p.ms); }
  }
  const kvBytes = 2 * hp.n_layer * hp.n_head_kv * hp.head_dim * act.json.tokens * 4;
  rows.push({ tokens: act.json.tokens, blocks: act.json.blocks, prefill_ms: act.json.prefill_ms, activate_ms: act.ms,
    ttft_anchor_ms: median(anchored), ttft_plain_ms: median(plain), kv_bytes: kvBytes });
  console.error(`anchor ${act.json.tokens} tokens: activation ${act.ms.toFixed(1)} ms, TTFT ${median(anchored).toFixed(2)} vs ${median(plain).toFixed(2)} ms`);
}
server.kill('SIGTERM');
fs.rmSync(dir, { recursive: true, force: true });
console.log(`model: ${path.basename(modelPath)} (L=${hp.n_layer}, N_kv=${hp.n_head_kv}, d_h=${hp.head_dim}), threads ${threads}, ` +
  `${rounds} interleaved rounds, medians; prefix caching off; TTFT = client time of a non-streamed max_tokens=1 request`);
console.log('');
console.log('| anchor tokens | pinned blocks | activation: prefill (server) | activation: HTTP call | TTFT with anchor | TTFT plain prompt | ratio | KV bytes per request saved |');
console.log('|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows)
  console.log(`| ${r.tokens} | ${r.blocks} | ${r.prefill_ms.toFixed(2)} ms | ${r.activate_ms.toFixed(2)} ms | ` +
    `${r.ttft_anchor_ms.toFixed(2)} ms | ${r.ttft_plain_ms.toFixed(2)} ms | ${(r.ttft_plain_ms / r.ttft_anchor_ms).toFixed(1)}x | ${r.kv_bytes} |`);
