// Sharing between tenants, each test on its own `pagoda serve`: limits from the API keys file (rpm and max_waiting
// answered 429 with Retry-After before anything streams; max_running honoured), the per-tenant /metrics families
// and their bounded labels, and a keys file with a bad limit refused at start-up naming its line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer } from './server_process.mjs';

const model = process.env.PAGODA_MODEL;

function keysFile(text) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pagoda-tenants-'));
  const file = path.join(dir, 'keys');
  fs.writeFileSync(file, text);
  return { file, dir };
}

function post(url, key, body) {
  return fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${key}` },
    body: JSON.stringify({ model, prompt: 'Once upon a time', ...body }),
  });
}

// The labelled samples of one family: [{labels: {...}, value}].
async function family(url, name) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out = [];
  for (const line of text.split('\n')) {
    const m = /^([a-z0-9_:]+)\{([^}]*)\} (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const labels = Object.fromEntries([...m[2].matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    out.push({ labels, value: Number(m[3]) });
  }
  return out;
}

test('rpm: over the limit is 429 with Retry-After and code tenant_rate_limited; other tenants are not counted', async () => {
  const { file, dir } = keysFile('b key-b rpm=2\nc key-c\n');
  const s = await startServer(['--api-keys-file', file]);
  try {
    for (let i = 0; i < 2; ++i) assert.equal((await post(s.url, 'key-b', { max_tokens: 2 })).status, 200);
    const refused = await post(s.url, 'key-b', { max_tokens: 2, stream: true });
    assert.equal(refused.status, 429);
    const retry = Number(refused.headers.get('retry-after'));
    assert.ok(Number.isInteger(retry) && retry >= 1 && retry <= 60, `Retry-After ${refused.headers.get('retry-after')}`);
    assert.match(refused.headers.get('content-type'), /application\/json/);  // refused before any SSE
    const body = await refused.json();
    assert.equal(body.error.code, 'tenant_rate_limited');
    assert.match(body.error.message, /tenant 'b' has used its 2 requests per minute/);
    for (let i = 0; i < 5; ++i) assert.equal((await post(s.url, 'key-c', { max_tokens: 2 })).status, 200);
    const counted = await family(s.url, 'pagoda:tenant_requests_refused_total');
    assert.deepEqual(counted.filter((x) => x.labels.reason === 'rpm').map((x) => [x.labels.tenant, x.value]), [['b', 1]]);
  } finally {
    s.proc.kill('SIGTERM');
    await s.exited;
    fs.rmSync(dir, { recursive: true });
  }
});

test('max_running and max_waiting: one runs, two wait, the rest get 429 before streaming; every accepted one completes', async () => {
  const { file, dir } = keysFile('a key-a max_running=1 max_waiting=2\nb key-b\n');
  const s = await startServer(['--api-keys-file', file]);
  try {
    const long = { max_tokens: 1500, ignore_eos: true, temperature: 0 };
    const sent = [];
    for (let i = 0; i < 6; ++i) sent.push(post(s.url, 'key-a', { ...long, stream: i % 2 === 1 }));
    // While a's requests run: at most one sequence of a runs, and b is served beside it.
    let peakRunning = 0;
    const watch = (async () => {
      for (let i = 0; i < 20; ++i) {
        const running = await family(s.url, 'pagoda:tenant_sequences_running');
        for (const x of running) if (x.labels.tenant === 'a') peakRunning = Math.max(peakRunning, x.value);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    const other = await post(s.url, 'key-b', { max_tokens: 4 });
    assert.equal(other.status, 200);
    const replies = await Promise.all(sent);
    await watch;
    const statuses = replies.map((r) => r.status);
    const accepted = replies.filter((r) => r.status === 200);
    const refused = replies.filter((r) => r.status === 429);
    assert.equal(accepted.length + refused.length, 6, `statuses ${statuses}`);
    // All six arrive before the first of 1500 tokens is done: at most one runs and two wait. Whether the first was
    // admitted before the others arrived decides between two and three accepted.
    assert.ok(accepted.length >= 2 && accepted.length <= 3, `statuses ${statuses}`);
    for (const r of refused) {
      assert.equal(r.headers.get('retry-after'), '1');
      const body = await r.json();
      assert.equal(body.error.code, 'tenant_queue_full');
      assert.match(body.error.message, /tenant 'a' has 2 requests waiting already \(max_waiting\)/);
    }
    for (const r of accepted) {  // complete: never an error mid-stream
      const text = await r.text();
      if (r.headers.get('content-type').includes('event-stream')) {
        assert.match(text, /"finish_reason":"length"/);
        assert.match(text, /data: \[DONE\]/);
        assert.doesNotMatch(text, /"error"/);
      } else {
        assert.equal(JSON.parse(text).choices[0].finish_reason, 'length');
      }
    }
    assert.ok(peakRunning <= 1, `tenant a ran ${peakRunning} sequences at once`);
    const refusedTotal = await family(s.url, 'pagoda:tenant_requests_refused_total');
    const waitingRefusals = refusedTotal.find((x) => x.labels.tenant === 'a' && x.labels.reason === 'max_waiting');
    assert.equal(waitingRefusals.value, refused.length);
    // Labels only for tenants with limits (b has none), and the gauges back at zero.
    const tenants = new Set((await family(s.url, 'pagoda:tenant_requests_waiting')).map((x) => x.labels.tenant));
    assert.deepEqual([...tenants], ['a']);
    const waiting = await family(s.url, 'pagoda:tenant_requests_waiting');
    assert.equal(waiting[0].value, 0);
    const limit = await family(s.url, 'pagoda:tenant_limit_max_running');
    assert.equal(limit[0].value, 1);
  } finally {
    s.proc.kill('SIGTERM');
    await s.exited;
    fs.rmSync(dir, { recursive: true });
  }
});

test('a request larger than its tenant may ever hold is refused at admission naming max_kv_blocks', async () => {
  const { file, dir } = keysFile('a key-a max_kv_blocks=2\n');
  const s = await startServer(['--api-keys-file', file, '--block-size', '16']);
  try {
    for (const stream of [false, true]) {  // streamed too: refused before the stream opens
      const r = await post(s.url, 'key-a', { prompt: 'Once upon a time '.repeat(20), max_tokens: 4, stream });
      assert.equal(r.status, 400);
      const e = (await r.json()).error;
      assert.equal(e.param, 'prompt');
      assert.match(e.message, /tenant 'a' may hold \(max_kv_blocks\) 32 tokens \(2 blocks of 16\), so it can never run/);
    }
    const long = await post(s.url, 'key-a', { prompt: 'Once', max_tokens: 100 });
    assert.equal(long.status, 400);
    const e = (await long.json()).error;
    assert.equal(e.param, 'max_tokens');
    assert.match(e.message, /tenant 'a' may hold \(max_kv_blocks\) 32 tokens/);
    assert.equal((await post(s.url, 'key-a', { prompt: 'Once', max_tokens: 4 })).status, 200);
  } finally {
    s.proc.kill('SIGTERM');
    await s.exited;
    fs.rmSync(dir, { recursive: true });
  }
});

test('a keys file with a bad limit stops the server at start-up, naming the line', async () => {
  const { file, dir } = keysFile('a key-a\nb key-b max_running=zero\n');
  try {
    await assert.rejects(startServer(['--api-keys-file', file]), (e) => {
      assert.match(e.message, /keys:2: 'max_running=zero': the value must be a whole number >= 1/);
      return true;
    });
  } finally {
    fs.rmSync(dir, { recursive: true });
  }
});
