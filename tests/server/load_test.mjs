// Bounded load on loopback: 64 concurrent streaming clients for two rounds; about a third of the requests are
// cancelled (the client aborts) at a random point. Afterwards: no unexpected errors, /metrics shows no running or
// waiting request and zero KV usage, and the server's resident memory did not grow between the rounds.
// Env: PAGODA_URL, PAGODA_MODEL, PAGODA_PID, PAGODA_LOAD_SECONDS (per round, default 25).
import assert from 'node:assert/strict';
import { sseEvents, scrape, rssKiB } from './sse.mjs';

const base = process.env.PAGODA_URL;
const model = process.env.PAGODA_MODEL;
const pid = Number(process.env.PAGODA_PID);
const roundSeconds = Number(process.env.PAGODA_LOAD_SECONDS ?? 25);
const clients = 64;

let seed = 12345;
function rand() {  // xorshift32: a repeatable mix of requests
  seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0;
  return seed / 4294967296;
}
const words = ['the', 'cat', 'sat', 'on', 'a', 'mat', 'and', 'looked', 'at', 'big', 'red', 'ball', 'Lily', 'Tom',
  'happy', 'park', 'tree', 'bird', 'sang', 'sun'];
const sharedPrefix = 'Once upon a time, in a small town, there lived a kind old man who loved his garden. ';

function makeRequest() {
  const chat = rand() < 0.3;
  const n = 1 + Math.floor(rand() * 120);
  let text = rand() < 0.5 ? sharedPrefix : '';
  for (let i = 0; i < n; ++i) text += words[Math.floor(rand() * words.length)] + ' ';
  const common = {
    model, stream: true, stream_options: { include_usage: true }, max_tokens: 8 + Math.floor(rand() * 120),
    temperature: rand() < 0.5 ? 0 : 0.8, seed: Math.floor(rand() * 1e6), ignore_eos: rand() < 0.5,
  };
  return chat
    ? { path: '/v1/chat/completions', body: { ...common, messages: [{ role: 'user', content: text }] } }
    : { path: '/v1/completions', body: { ...common, prompt: text } };
}

async function oneRequest(stats) {
  const { path, body } = makeRequest();
  const cancelAfter = rand() < 1 / 3 ? 1 + Math.floor(rand() * 30) : Infinity;
  const ctrl = new AbortController();
  let res;
  try {
    res = await fetch(base + path, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body), signal: ctrl.signal,
    });
  } catch (e) {
    stats.errors.push(`fetch: ${e}`);
    return;
  }
  if (res.status !== 200) {
    stats.errors.push(`status ${res.status}: ${await res.text()}`);
    return;
  }
  let chunks = 0, done = false, usage = null, finish = null, tokens = 0;
  try {
    for await (const ev of sseEvents(res.body)) {
      if (ev === '[DONE]') { done = true; continue; }
      if (ev.error) throw new Error(`error event: ${JSON.stringify(ev.error)}`);
      if (ev.usage) usage = ev.usage;
      for (const c of ev.choices) {
        if (c.finish_reason) finish = c.finish_reason;
        tokens += 1;
      }
      if (++chunks >= cancelAfter) {
        ctrl.abort();
        stats.cancelled += 1;
        return;
      }
    }
  } catch (e) {
    if (ctrl.signal.aborted) { stats.cancelled += 1; return; }
    stats.errors.push(`stream: ${e}`);
    return;
  }
  if (!done || !usage || !finish) {
    stats.errors.push(`incomplete stream: done=${done} usage=${JSON.stringify(usage)} finish=${finish}`);
    return;
  }
  if (body.ignore_eos && usage.completion_tokens !== body.max_tokens)
    stats.errors.push(`ignore_eos request got ${usage.completion_tokens} of ${body.max_tokens} tokens`);
  stats.completed += 1;
  stats.tokens += usage.completion_tokens;
}

async function round(label) {
  const stats = { completed: 0, cancelled: 0, tokens: 0, errors: [] };
  const deadline = Date.now() + roundSeconds * 1000;
  const t0 = Date.now();
  await Promise.all(Array.from({ length: clients }, async () => {
    while (Date.now() < deadline) await oneRequest(stats);
  }));
  const secs = (Date.now() - t0) / 1000;
  console.log(`${label}: ${stats.completed} completed, ${stats.cancelled} cancelled, ${stats.tokens} tokens in ` +
    `${secs.toFixed(1)} s, ${stats.errors.length} errors`);
  assert.deepEqual(stats.errors.slice(0, 5), [], `${label}: unexpected errors`);
  assert.ok(stats.completed > clients, `${label}: only ${stats.completed} requests completed`);
  assert.ok(stats.cancelled > stats.completed / 5, `${label}: only ${stats.cancelled} cancelled`);

  // Cancelled requests are freed by the engine's next step: the gauges return to zero.
  let m;
  for (let i = 0; i < 100; ++i) {
    m = await scrape(base);
    if (m['pagoda:num_requests_running'] === 0 && m['pagoda:num_requests_waiting'] === 0 &&
        m['pagoda:kv_cache_usage_perc'] === 0) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(m['pagoda:num_requests_running'], 0, `${label}: requests still running`);
  assert.equal(m['pagoda:num_requests_waiting'], 0, `${label}: requests still waiting`);
  assert.equal(m['pagoda:kv_cache_usage_perc'], 0, `${label}: KV blocks still in use`);
  const rss = rssKiB(pid);
  console.log(`${label}: server RSS ${(rss / 1024).toFixed(1)} MiB; ` +
    `prefix cache hits ${m['pagoda:prefix_cache_hits_total']} of ${m['pagoda:prefix_cache_queries_total']} tokens`);
  return rss;
}

const rss1 = await round('round 1');
const rss2 = await round('round 2');
// The first round warms every allocation (threads, batch buffers, workspace); the second must not add to it.
const growth = rss2 - rss1;
console.log(`RSS growth between rounds: ${(growth / 1024).toFixed(1)} MiB`);
assert.ok(growth < Math.max(16 * 1024, rss1 * 0.05), `resident memory grew by ${growth} KiB between rounds`);
console.log('load test passed');
