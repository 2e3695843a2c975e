// What routers ask of a replica: the render endpoints (vLLM's shapes; the token ids the request would prefill,
// after the chat template) and, with --metrics-vllm-names, the gauges under vLLM's names. Env: PAGODA_URL (the
// default server), PAGODA_MODEL_PATH.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { startServer } from './server_process.mjs';

const model = path.basename(process.env.PAGODA_MODEL_PATH, '.gguf');
const vllmNamed = await startServer(['--metrics-vllm-names']);
after(() => vllmNamed.proc.kill('SIGTERM'));

async function post(url, body, base = process.env.PAGODA_URL) {
  const r = await fetch(`${base}${url}`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body) });
  return { status: r.status, json: await r.json() };
}

test('chat render: the ids the request prefills, with its sampling parameters', async () => {
  const messages = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Once upon a time' }];
  const r = await post('/v1/chat/completions/render', { model, messages, temperature: 0.5, max_tokens: 7, seed: 3,
    stop: ['x'] });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  assert.ok(!Array.isArray(r.json));
  assert.match(r.json.request_id, /^chatcmpl-/);
  assert.equal(r.json.model, model);
  assert.deepEqual(r.json.sampling_params.stop, ['x']);
  assert.equal(r.json.sampling_params.max_tokens, 7);
  assert.equal(r.json.sampling_params.seed, 3);
  assert.equal(r.json.sampling_params.temperature, 0.5);
  // The same request run: it prefilled exactly these ids (its logprobs' prompt count, and greedy text equal to a
  // completion of the rendered ids).
  const run = await post('/v1/chat/completions', { model, messages, temperature: 0, max_tokens: 8 });
  assert.equal(run.json.usage.prompt_tokens, r.json.token_ids.length);
  const again = await post('/v1/completions', { model, prompt: r.json.token_ids, temperature: 0, max_tokens: 8 });
  assert.equal(again.json.choices[0].text, run.json.choices[0].message.content);
});

test('completions render: one entry per prompt, ids as the tokenizer gives them', async () => {
  const r = await post('/v1/completions/render', { model, prompt: ['Once upon', [1, 2, 3]], max_tokens: 4 });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  assert.equal(r.json.length, 2);
  assert.match(r.json[0].request_id, /^cmpl-.*-0$/);
  assert.match(r.json[1].request_id, /^cmpl-.*-1$/);
  assert.deepEqual(r.json[1].token_ids, [1, 2, 3]);
  const run = await post('/v1/completions', { model, prompt: 'Once upon', max_tokens: 1 });
  assert.equal(run.json.usage.prompt_tokens, r.json[0].token_ids.length);
  // A request that would be a 400 is a 400 here.
  const bad = await post('/v1/completions/render', { model, prompt: 'x', frobnicate: 1 });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error.param, 'frobnicate');
});

test('--metrics-vllm-names: the router gauges under vLLM\'s names, equal to pagoda\'s', async () => {
  const text = await (await fetch(`${vllmNamed.url}/metrics`)).text();
  for (const name of ['num_requests_waiting', 'num_requests_running', 'kv_cache_usage_perc']) {
    const ours = new RegExp(`^pagoda:${name}\\{[^}]*\\} (\\S+)$`, 'm').exec(text);
    const theirs = new RegExp(`^vllm:${name}\\{[^}]*\\} (\\S+)$`, 'm').exec(text);
    assert.ok(ours && theirs, name);
    assert.equal(theirs[1], ours[1]);
  }
  assert.match(text, /^vllm:cache_config_info\{block_size="\d+",num_gpu_blocks="\d+"\} 1$/m);
  const plain = await (await fetch(`${process.env.PAGODA_URL}/metrics`)).text();
  assert.ok(!plain.includes('vllm:'), 'off by default');
});
