// Malformed input over raw sockets: whatever arrives, the server answers with a clear status (JSON errors in
// OpenAI's shape where it gets that far), never crashes or hangs, and keeps serving.
// Env: PAGODA_URL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';

const url = new URL(process.env.PAGODA_URL);

// Sends raw bytes, returns what came back before the server closed or `ms` passed.
function raw(bytes, { ms = 5000, halfClose = false } = {}) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(url.port), url.hostname);
    const parts = [];
    const timer = setTimeout(() => { sock.destroy(); resolve(Buffer.concat(parts).toString('latin1')); }, ms);
    sock.on('data', (d) => parts.push(d));
    sock.on('error', (e) => { clearTimeout(timer); if (e.code === 'ECONNRESET' || e.code === 'EPIPE') resolve(Buffer.concat(parts).toString('latin1')); else reject(e); });
    sock.on('close', () => { clearTimeout(timer); resolve(Buffer.concat(parts).toString('latin1')); });
    sock.write(bytes, () => { if (halfClose) sock.end(); });
  });
}

function post(path, body, extraHeaders = '') {
  const b = Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
  const head = `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${b.length}\r\n` +
    `Connection: close\r\n${extraHeaders}\r\n`;
  return raw(Buffer.concat([Buffer.from(head, 'latin1'), b]));
}

function statusOf(response) {
  const m = /^HTTP\/1\.1 (\d{3})/.exec(response);
  return m ? Number(m[1]) : null;
}

function errorOf(response) {
  const body = response.slice(response.indexOf('\r\n\r\n') + 4);
  const j = JSON.parse(body);
  assert.equal(typeof j.error.message, 'string');
  assert.ok('type' in j.error && 'param' in j.error && 'code' in j.error, body);
  return j.error;
}

async function healthy() {
  const r = await fetch(`${process.env.PAGODA_URL}/health`);
  assert.equal(r.status, 200);
}

test('malformed JSON bodies are 400 with a message', async () => {
  const bodies = ['{', '{"prompt": "x",}', 'null', '[1,2]', '"text"', '{"prompt": NaN}', '{"prompt": "x"} trailing',
    '', '\u0000\u0001\u0002', '{"prompt": "\\ud800"}', '{"prompt": 1e999999}'];
  for (const body of bodies) {
    for (const path of ['/v1/completions', '/v1/chat/completions']) {
      const r = await post(path, body);
      assert.equal(statusOf(r), 400, `${path} ${JSON.stringify(body)}: ${r.slice(0, 200)}`);
      errorOf(r);
    }
  }
  await healthy();
});

test('wrong types and out-of-range values are 400 naming the field', async () => {
  const cases = [
    ['/v1/completions', { prompt: 5 }, 'prompt'],
    ['/v1/completions', { prompt: [] }, 'prompt'],
    ['/v1/completions', { prompt: [-1] }, 'prompt'],
    ['/v1/completions', { prompt: [1.5] }, 'prompt'],
    ['/v1/completions', { prompt: ['a', 5] }, 'prompt'],
    ['/v1/completions', { prompt: 'x', tools: [] }, 'tools'],
    ['/v1/completions', { prompt: 'x', max_tokens: '5' }, 'max_tokens'],
    ['/v1/completions', { prompt: 'x', max_tokens: 1e30 }, 'max_tokens'],
    ['/v1/completions', { prompt: 'x', temperature: null, top_k: 'a' }, 'top_k'],
    ['/v1/completions', { prompt: 'x', seed: 'abc' }, 'seed'],
    ['/v1/completions', { prompt: 'x', stop: [1] }, 'stop'],
    ['/v1/completions', { prompt: 'x', stream: 'yes' }, 'stream'],
    ['/v1/completions', { prompt: 'x', stream_options: { include_usage: true } }, 'stream_options'],
    ['/v1/completions', { prompt: 'x', cache_salt: 7 }, 'cache_salt'],
    ['/v1/completions', { prompt: 'x', presence_penalty: 3 }, 'presence_penalty'],
    ['/v1/completions', { prompt: 'x', min_p: -1 }, 'min_p'],
    ['/v1/completions', { prompt: 'x', model: 5 }, 'model'],
    ['/v1/chat/completions', { messages: 'hi' }, 'messages'],
    ['/v1/chat/completions', { messages: [{ content: 'no role' }] }, 'messages'],
    ['/v1/chat/completions', { messages: [{ role: 'user', content: 5 }] }, 'messages'],
    ['/v1/chat/completions', { messages: [{ role: 'user', content: [{ type: 'image_url' }] }] }, 'messages'],
    ['/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], logprobs: 3 }, 'logprobs'],
    ['/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], top_logprobs: 2 }, 'top_logprobs'],
    ['/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], max_completion_tokens: 0 }, 'max_tokens'],
  ];
  for (const [path, body, param] of cases) {
    const r = await post(path, JSON.stringify(body));
    assert.equal(statusOf(r), 400, `${JSON.stringify(body)}: ${r.slice(0, 300)}`);
    assert.equal(errorOf(r).param, param, JSON.stringify(body));
  }
  await healthy();
});

test('a body over the size limit is 413, not read into memory', async () => {
  const big = Buffer.alloc(8 << 20, 'a');
  const r = await post('/v1/completions', big);
  assert.equal(statusOf(r), 413, r.slice(0, 200));
  await healthy();
});

test('deeply nested JSON is rejected without a crash', async () => {
  const r = await post('/v1/completions', '['.repeat(1 << 20));
  assert.equal(statusOf(r), 400);
  const r2 = await post('/v1/completions', `{"prompt": "x", "extra": ${'['.repeat(100000)}${']'.repeat(100000)}}`);
  assert.equal(statusOf(r2), 400);  // refused before anything walks it recursively
  assert.match(errorOf(r2).message, /nests deeper than 256/);
  await healthy();
});

test('garbage and truncated requests do not hang the server', async () => {
  for (const bytes of ['GARBAGE\r\n\r\n', 'GET\r\n\r\n', `GET /${'a'.repeat(100000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
    'POST /v1/completions HTTP/1.1\r\nContent-Length: -5\r\n\r\n',
    'POST /v1/completions HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n',
    'POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n']) {
    const r = await raw(bytes, { ms: 1500 });
    const status = statusOf(r);
    assert.ok(status === null || status >= 400, `${JSON.stringify(bytes.slice(0, 60))} -> ${r.slice(0, 100)}`);
  }
  // A body shorter than its Content-Length, then the client goes away.
  await raw('POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"prompt":', { ms: 300 });
  await healthy();
});

test('unknown paths and methods get JSON errors', async () => {
  const r = await raw('GET /v2/nothing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  assert.equal(statusOf(r), 404);
  errorOf(r);
  const r2 = await raw('GET /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  assert.ok([404, 405].includes(statusOf(r2)));
  errorOf(r2);
});

test('metrics is Prometheus text with the required families', async () => {
  const r = await fetch(`${process.env.PAGODA_URL}/metrics`);
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /^text\/plain/);
  const text = await r.text();
  for (const name of ['pagoda:time_to_first_token_seconds', 'pagoda:inter_token_latency_seconds',
    'pagoda:e2e_request_latency_seconds']) {
    assert.match(text, new RegExp(`# TYPE ${name} histogram`));
    assert.match(text, new RegExp(`${name}_bucket\\{[^}]*le="\\+Inf"\\} \\d+`));
    assert.match(text, new RegExp(`${name}_count\\{[^}]*\\} \\d+`));
  }
  for (const name of ['num_requests_running', 'num_requests_waiting', 'kv_cache_usage_perc']) {
    assert.match(text, new RegExp(`# TYPE pagoda:${name} gauge`));
  }
  for (const name of ['prefix_cache_queries_total', 'prefix_cache_hits_total', 'num_preemptions_total',
    'prompt_tokens_total', 'generation_tokens_total']) {
    assert.match(text, new RegExp(`# TYPE pagoda:${name} counter`));
  }
  assert.match(text, /pagoda:cache_config_info\{block_size="\d+",num_gpu_blocks="\d+"\} 1/);
  // Every sample line is NAME{labels} VALUE.
  for (const line of text.split('\n').filter((l) => l && !l.startsWith('#')))
    assert.match(line, /^pagoda:[a-z0-9_]+\{[^}]*\} [-+0-9.eInf]+$/, line);
});
