// Server lifecycle and access control, each on its own `pagoda serve` process: API keys (401), queue limit
// (429), tenant and cache_salt isolation of the prefix cache, client disconnects freeing KV blocks, and graceful
// shutdown on SIGTERM / SIGINT.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { startServer } from './server_process.mjs';
import { sseEvents, scrape } from './sse.mjs';

const model = 'stories260K';
const longPrompt = 'Once upon a time there was a little girl named Lily. She liked to play in the park with her dog. ' +
  'One day the sun was hot and the birds sang in the big green tree near the pond.';

function post(url, body, key, signal) {
  const headers = { 'Content-Type': 'application/json' };
  if (key) headers.Authorization = `Bearer ${key}`;
  return fetch(`${url}/v1/completions`, { method: 'POST', headers, body: JSON.stringify({ model, ...body }), signal });
}

// A raw TCP connection to the server (rejects with the socket error, e.g. ECONNREFUSED).
function connect(url) {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(u.port), u.hostname);
    sock.once('connect', () => resolve(sock));
    sock.once('error', reject);
  });
}

// Sends one request on a raw connection and reads its response (headers and a Content-Length body).
function exchange(sock, text, ms = 5000) {
  return new Promise((resolve, reject) => {
    let data = '';
    const timer = setTimeout(() => reject(new Error(`no response after ${ms} ms; got ${JSON.stringify(data)}`)), ms);
    const complete = () => {
      const head = data.indexOf('\r\n\r\n');
      const len = /content-length: (\d+)/i.exec(data);
      return head >= 0 && len && data.length >= head + 4 + Number(len[1]);
    };
    sock.on('data', (d) => {
      data += d;
      if (complete()) { clearTimeout(timer); sock.destroy(); resolve(data); }
    });
    sock.once('end', () => { clearTimeout(timer); resolve(data); });
    sock.once('error', (e) => { clearTimeout(timer); reject(e); });
    sock.write(text);
  });
}

async function waitFor(predicate, ms = 5000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await predicate();
    if (v) return v;
    if (Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('API key: 401 without or with a wrong key; health and metrics stay open', async () => {
  const s = await startServer(['--api-key', 'sekrit']);
  try {
    for (const apiKey of ['wrong', 'sekri', 'sekrit2']) {
      const c = new OpenAI({ baseURL: `${s.url}/v1`, apiKey, maxRetries: 0 });
      await assert.rejects(c.completions.create({ model, prompt: 'x', max_tokens: 1 }),
        (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
      await assert.rejects(c.models.list(), (e) => e.status === 401);
    }
    const none = await fetch(`${s.url}/v1/completions`, { method: 'POST', body: '{"prompt":"x"}' });
    assert.equal(none.status, 401);
    assert.equal((await none.json()).error.code, 'invalid_api_key');
    const ok = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'sekrit', maxRetries: 0 });
    assert.equal((await ok.completions.create({ model, prompt: 'x', max_tokens: 2 })).usage.completion_tokens, 2);
    assert.equal((await fetch(`${s.url}/health`)).status, 200);
    assert.equal((await fetch(`${s.url}/metrics`)).status, 200);
  } finally {
    s.proc.kill('SIGTERM');
    await s.exited;
  }
});

test('queue full: 429 beyond max-num-seqs + max-queue requests in flight', async () => {
  const s = await startServer(['--max-num-seqs', '1', '--max-queue', '0']);
  try {
    const first = await post(s.url, { prompt: 'x', max_tokens: 1500, ignore_eos: true, stream: true });
    assert.equal(first.status, 200);
    const events = sseEvents(first.body);
    await events.next();  // the first request is running
    const c = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'x', maxRetries: 0 });
    await assert.rejects(c.completions.create({ model, prompt: 'y', max_tokens: 1 }),
      (e) => e instanceof OpenAI.RateLimitError && e.status === 429);
    await events.return();  // disconnect
    await waitFor(async () => (await post(s.url, { prompt: 'y', max_tokens: 1 })).status === 200);
    const m = await scrape(s.url);
    assert.ok(m['pagoda:request_rejected_queue_full_total'] >= 1);
  } finally {
    s.proc.kill('SIGTERM');
    await s.exited;
  }
});

test('a client that disconnects mid-stream frees its blocks', async () => {
  const s = await startServer();
  try {
    const res = await post(s.url, { prompt: longPrompt, max_tokens: 1800, ignore_eos: true, stream: true });
    const events = sseEvents(res.body);
    for (let i = 0; i < 3; ++i) await events.next();
    const busy = await scrape(s.url);
    assert.equal(busy['pagoda:num_requests_running'], 1);
    assert.ok(busy['pagoda:kv_cache_usage_perc'] > 0);
    await events.return();  // closes the connection
    const m = await waitFor(async () => {
      const x = await scrape(s.url);
      return x['pagoda:num_requests_running'] === 0 && x['pagoda:kv_cache_usage_perc'] === 0 ? x : null;
    });
    assert.ok(m, 'the request kept running after its client left');
    assert.ok(m['pagoda:generation_tokens_total'] < 1800, 'the request ran to the end instead of being cancelled');
  } finally {
    s.proc.kill('SIGTERM');
    await s.exited;
  }
});

test('a non-streamed request whose client disconnects is cancelled and frees its blocks', async () => {
  const s = await startServer();
  try {
    const abort = new AbortController();
    // Four choices of 1800 tokens: long enough that a disconnect is seen (once per 500 ms heartbeat) before the end.
    const pending = post(s.url, { prompt: longPrompt, max_tokens: 1800, n: 4, ignore_eos: true }, undefined, abort.signal)
      .catch((e) => e);
    const busy = await waitFor(async () => {
      const x = await scrape(s.url);
      return x['pagoda:num_requests_running'] >= 1 && x['pagoda:generation_tokens_total'] > 0 ? x : null;
    });
    assert.ok(busy, 'the request did not start');
    abort.abort();  // closes the connection without reading a byte
    assert.equal((await pending).name, 'AbortError');
    const m = await waitFor(async () => {
      const x = await scrape(s.url);
      return x['pagoda:num_requests_running'] === 0 && x['pagoda:kv_cache_usage_perc'] === 0 ? x : null;
    });
    assert.ok(m, 'the request kept running after its client left');
    assert.ok(m['pagoda:generation_tokens_total'] < 4 * 1800, 'the request ran to the end instead of being cancelled');
  } finally {
    s.proc.kill('SIGTERM');
    await s.exited;
  }
});

test('prefix cache is shared within a tenant and cache_salt only', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pagoda-keys-'));
  const file = path.join(dir, 'keys');
  fs.writeFileSync(file, '# tenant key\nacme key-a\nglobex key-b\n');
  const s = await startServer(['--api-keys-file', file]);
  try {
    // The engine publishes its counters after each step, and a step's tokens reach the client before that: wait
    // for the generated-token counter to include this request's token, so the hit counter of the same snapshot
    // includes its prefix lookup too.
    const run = async (key, extra = {}) => {
      const before = await scrape(s.url);
      const r = await post(s.url, { prompt: longPrompt, max_tokens: 1, ...extra }, key);
      assert.equal(r.status, 200, await r.text());
      const after = await waitFor(async () => {
        const m = await scrape(s.url);
        return m['pagoda:generation_tokens_total'] > before['pagoda:generation_tokens_total'] ? m : null;
      });
      assert.ok(after, 'the metrics never counted the request');
      return after['pagoda:prefix_cache_hits_total'] - before['pagoda:prefix_cache_hits_total'];
    };
    assert.equal(await run('key-a'), 0);           // cold
    assert.ok(await run('key-a') > 0);             // same tenant: hit
    assert.equal(await run('key-b'), 0);           // other tenant: no hit on acme's blocks
    assert.equal(await run('key-a', { cache_salt: 's1' }), 0);  // a salt is its own namespace
    assert.ok(await run('key-a', { cache_salt: 's1' }) > 0);
    assert.equal(await run('key-b', { cache_salt: 's1' }), 0);  // the same salt under another tenant
    assert.equal((await post(s.url, { prompt: 'x' }, 'key-c')).status, 401);
  } finally {
    s.proc.kill('SIGTERM');
    await s.exited;
    fs.rmSync(dir, { recursive: true });
  }
});

test('SIGTERM drains: new connections refused, open ones get 503, the stream in flight completes, exit 0', async () => {
  const s = await startServer(['--shutdown-timeout', '60']);
  const idle = await connect(s.url);  // a kept-alive connection opened before the signal
  const res = await post(s.url, { prompt: 'x', max_tokens: 1800, ignore_eos: true, stream: true });
  const events = sseEvents(res.body);
  await events.next();
  s.proc.kill('SIGTERM');
  // The listener closes: a new connection is refused instead of being answered 503 for as long as the drain lasts.
  const refused = await waitFor(async () => {
    try {
      (await connect(s.url)).destroy();
      return false;
    } catch (e) {
      return e.code === 'ECONNREFUSED';
    }
  });
  assert.ok(refused, 'new connections are still accepted while draining');
  // A connection that was already open is answered 503, and closed.
  const health = await exchange(idle, 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
  assert.match(health, /^HTTP\/1\.1 503 /);
  assert.match(health, /shutting down/);
  let finish = null, done = false, tokens = 1;
  for await (const ev of events) {
    if (ev === '[DONE]') done = true;
    else for (const c of ev.choices) { tokens += 1; finish = c.finish_reason ?? finish; }
  }
  assert.ok(done);
  assert.equal(finish, 'length');
  const { code } = await s.exited;
  assert.equal(code, 0, s.log());
  assert.match(s.log(), /stopped/);
});

test('SIGINT past the deadline aborts the streams in flight, which still end cleanly; exit 0', async () => {
  const s = await startServer(['--shutdown-timeout', '0']);
  const res = await post(s.url, { prompt: 'x', max_tokens: 1800, ignore_eos: true, stream: true });
  const events = sseEvents(res.body);
  await events.next();
  s.proc.kill('SIGINT');
  let finish = null, done = false;
  for await (const ev of events) {
    if (ev === '[DONE]') done = true;
    else for (const c of ev.choices) finish = c.finish_reason ?? finish;
  }
  assert.ok(done, 'no [DONE] after the abort');
  assert.ok(finish === 'abort' || finish === 'length', `finish_reason ${finish}`);
  const { code } = await s.exited;
  assert.equal(code, 0, s.log());
});

test('a request the KV pool can never hold is a 400 naming the pool, streamed or not', async () => {
  const server = await startServer(['--num-blocks', '8']);  // 8 blocks of 16: 128 tokens
  try {
    const post = (body) => fetch(`${server.url}/v1/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const long = 'a '.repeat(150);
    for (const stream of [false, true]) {
      const r = await post({ prompt: long, max_tokens: 4, stream });
      assert.equal(r.status, 400);
      const e = (await r.json()).error;
      assert.equal(e.param, 'prompt');
      assert.match(e.message, /KV pool holds 128 tokens \(8 blocks of 16\)/);
      // A prompt that fits, but not with the max_tokens asked for.
      const r2 = await post({ prompt: 'a '.repeat(40), max_tokens: 200, stream });
      assert.equal(r2.status, 400);
      const e2 = (await r2.json()).error;
      assert.equal(e2.param, 'max_tokens');
      assert.match(e2.message, /plus max_tokens \(200\) needs \d+ tokens of KV cache; the server's KV pool holds 128/);
    }
    // Without max_tokens the request runs and stops where the pool ends, as "length".
    const r3 = await post({ prompt: 'a '.repeat(40), ignore_eos: true });
    assert.equal(r3.status, 200);
    const j = await r3.json();
    assert.equal(j.choices[0].finish_reason, 'length');
    assert.ok(j.usage.total_tokens <= 129, JSON.stringify(j.usage));
  } finally {
    server.proc.kill('SIGTERM');
    await server.exited;
  }
});
