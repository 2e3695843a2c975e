// The official OpenAI client library against `pagoda serve` (stories260K): completions, chat, streaming, n,
// logprobs, stop strings, several prompts per request, and the error statuses it maps to exception classes.
// Env: PAGODA_URL (http://127.0.0.1:PORT), PAGODA_MODEL (served name), PAGODA_GOLDEN (stories260K-greedy.jsonl).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import OpenAI from 'openai';

const baseURL = `${process.env.PAGODA_URL}/v1`;
const model = process.env.PAGODA_MODEL;
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0 });
const golden = fs.readFileSync(process.env.PAGODA_GOLDEN, 'utf8').trim().split('\n').map((l) => JSON.parse(l));

async function collect(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

test('models lists the served model', async () => {
  const list = await client.models.list();
  assert.deepEqual(list.data.map((m) => m.id), [model]);
});

test('greedy completions match llama.cpp goldens token for token', async () => {
  for (const g of golden.slice(0, 4)) {
    const want = g.steps.map((s) => `token_id:${s.top[0][0]}`);
    const r = await client.completions.create({
      model, prompt: g.prompt, max_tokens: want.length, temperature: 0, logprobs: 1,
      ignore_eos: true, return_tokens_as_token_ids: true,
    });
    assert.deepEqual(r.choices[0].logprobs.tokens, want, `prompt ${JSON.stringify(g.prompt)}`);
    assert.equal(r.usage.completion_tokens, want.length);
    assert.equal(r.usage.prompt_tokens, g.prompt_ids.length);
    assert.equal(r.usage.total_tokens, want.length + g.prompt_ids.length);
  }
});

test('a prompt of token ids gives the same completion as its text', async () => {
  const g = golden[0];
  const a = await client.completions.create({ model, prompt: g.prompt, max_tokens: 12, temperature: 0 });
  const b = await client.completions.create({ model, prompt: g.prompt_ids, max_tokens: 12, temperature: 0 });
  assert.equal(a.choices[0].text, b.choices[0].text);
  assert.ok(a.choices[0].text.length > 0);
});

test('streamed completion equals the non-streamed one, with usage at the end', async () => {
  const params = { model, prompt: 'Once upon a time', max_tokens: 40, temperature: 0 };
  const whole = await client.completions.create(params);
  const chunks = await collect(await client.completions.create({
    ...params, stream: true, stream_options: { include_usage: true },
  }));
  const text = chunks.flatMap((c) => c.choices.map((x) => x.text)).join('');
  assert.equal(text, whole.choices[0].text);
  const finish = chunks.flatMap((c) => c.choices).filter((x) => x.finish_reason);
  assert.equal(finish.length, 1);
  assert.equal(finish[0].finish_reason, whole.choices[0].finish_reason);
  const last = chunks.at(-1);
  assert.deepEqual(last.choices, []);
  assert.equal(last.usage.completion_tokens, whole.usage.completion_tokens);
  assert.equal(last.usage.prompt_tokens, whole.usage.prompt_tokens);
  for (const c of chunks.slice(0, -1)) assert.equal(c.usage, null);
});

test('usage.prompt_tokens_details.cached_tokens counts the prompt tokens the prefix cache served', async () => {
  // A prompt no other test sends: the first request finds nothing cached, the repeat finds every full block but
  // the one holding the last prompt token (computed again for its logits). Default block size: 16.
  const prompt = `Cache probe ${process.pid} ${Date.now()}: the little fox ran over the hill and into the woods.`;
  const first = await client.completions.create({ model, prompt, max_tokens: 2, temperature: 0 });
  assert.equal(first.usage.prompt_tokens_details.cached_tokens, 0, JSON.stringify(first.usage));
  const again = await client.completions.create({ model, prompt, max_tokens: 2, temperature: 0 });
  const cached = again.usage.prompt_tokens_details.cached_tokens;
  const n = again.usage.prompt_tokens;
  assert.ok(n > 32, `the probe prompt is ${n} tokens`);
  assert.equal(cached % 16, 0, JSON.stringify(again.usage));
  assert.ok(cached > 0 && cached < n && cached >= n - 32, JSON.stringify(again.usage));
  const chunks = await collect(await client.completions.create({
    model, prompt, max_tokens: 2, temperature: 0, stream: true, stream_options: { include_usage: true } }));
  assert.equal(chunks.at(-1).usage.prompt_tokens_details.cached_tokens, cached);
  const chat = (content) => client.chat.completions.create({ model, max_tokens: 2, temperature: 0,
    messages: [{ role: 'user', content }] });
  const c1 = await chat(prompt + ' Chat.');
  const c2 = await chat(prompt + ' Chat.');
  assert.ok(c2.usage.prompt_tokens_details.cached_tokens > c1.usage.prompt_tokens_details.cached_tokens,
    JSON.stringify([c1.usage, c2.usage]));
});

test('chat: non-streamed and streamed answers agree; the role comes first', async () => {
  const params = {
    model, max_completion_tokens: 24, temperature: 0,
    messages: [{ role: 'system', content: 'You tell stories.' }, { role: 'user', content: 'Tell me about a cat.' }],
  };
  const whole = await client.chat.completions.create(params);
  assert.equal(whole.object, 'chat.completion');
  assert.equal(whole.choices[0].message.role, 'assistant');
  assert.equal(whole.usage.completion_tokens, 24);
  const chunks = await collect(await client.chat.completions.create({ ...params, stream: true }));
  assert.equal(chunks[0].choices[0].delta.role, 'assistant');
  const text = chunks.flatMap((c) => c.choices.map((x) => x.delta.content ?? '')).join('');
  assert.equal(text, whole.choices[0].message.content);
  assert.equal(chunks.at(-1).choices[0].finish_reason, 'length');
  assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk' && c.id === chunks[0].id));
});

test('chat accepts content as a list of text parts', async () => {
  const a = await client.chat.completions.create({
    model, max_tokens: 8, temperature: 0, messages: [{ role: 'user', content: 'A dog ran.' }],
  });
  const b = await client.chat.completions.create({
    model, max_tokens: 8, temperature: 0,
    messages: [{ role: 'user', content: [{ type: 'text', text: 'A dog' }, { type: 'text', text: ' ran.' }] }],
  });
  assert.equal(a.choices[0].message.content, b.choices[0].message.content);
});

test('n choices with a seed are reproducible and distinct in index', async () => {
  const params = { model, prompt: 'The little bird', max_tokens: 16, temperature: 0.9, seed: 1234, n: 3 };
  const a = await client.completions.create(params);
  const b = await client.completions.create(params);
  assert.equal(a.choices.length, 3);
  assert.deepEqual(a.choices.map((c) => c.index).sort(), [0, 1, 2]);
  assert.deepEqual(a.choices.map((c) => c.text), b.choices.map((c) => c.text));
  assert.equal(a.usage.completion_tokens, 48);
});

test('streamed n choices each end once', async () => {
  const chunks = await collect(await client.chat.completions.create({
    model, max_tokens: 10, temperature: 0.7, seed: 7, n: 2, stream: true,
    messages: [{ role: 'user', content: 'Hello' }],
  }));
  const ends = chunks.flatMap((c) => c.choices).filter((x) => x.finish_reason);
  assert.deepEqual(ends.map((x) => x.index).sort(), [0, 1]);
});

test('chat logprobs carry top alternatives in descending order', async () => {
  const r = await client.chat.completions.create({
    model, max_tokens: 6, temperature: 0, logprobs: true, top_logprobs: 3,
    messages: [{ role: 'user', content: 'Hi' }],
  });
  const content = r.choices[0].logprobs.content;
  assert.equal(content.length, 6);
  for (const entry of content) {
    assert.equal(entry.top_logprobs.length, 3);
    assert.ok(entry.logprob <= 0);
    assert.equal(entry.top_logprobs[0].logprob, entry.logprob);  // greedy: the chosen token is the best
    for (let i = 1; i < 3; ++i) assert.ok(entry.top_logprobs[i - 1].logprob >= entry.top_logprobs[i].logprob);
  }
});

test('a stop string ends the text before it', async () => {
  const params = { model, prompt: 'Once upon a time', max_tokens: 60, temperature: 0 };
  const full = (await client.completions.create(params)).choices[0].text;
  const cut = full.indexOf('girl');
  assert.ok(cut > 0, full);
  const r = await client.completions.create({ ...params, stop: ['girl'] });
  assert.equal(r.choices[0].text, full.slice(0, cut));
  assert.equal(r.choices[0].finish_reason, 'stop');
});

test('fields the server does not implement are 400 naming them, never silently ignored', async () => {
  const chat = { model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 };
  const cases = [
    [() => client.completions.create({ model, prompt: 'Hi', max_tokens: 2, some_future_field: { x: 1 } }), 'some_future_field'],
    [() => client.chat.completions.create({ ...chat, response_format: { type: 'json_object', schema: {} } }), 'response_format'],
    [() => client.chat.completions.create({ ...chat, tools: [{ type: 'code_interpreter' }] }), 'tools'],
    [() => client.chat.completions.create({ ...chat, tool_choice: 'auto' }), 'tool_choice'],
    [() => client.chat.completions.create({ ...chat, functions: [{ name: 'f', parameters: {} }] }), 'functions'],
    [() => client.completions.create({ model, prompt: 'Hi', echo: true }), 'echo'],
    [() => client.completions.create({ model, prompt: 'Hi', suffix: 'end' }), 'suffix'],
    [() => client.completions.create({ model, prompt: 'Hi', best_of: 3 }), 'best_of'],
    [() => client.completions.create({ model, prompt: 'Hi', logit_bias: { 99999: 5 } }), 'logit_bias'],
  ];
  for (const [call, param] of cases) {
    await assert.rejects(call(), (e) => {
      assert.ok(e instanceof OpenAI.BadRequestError, `${param}: ${e}`);
      assert.equal(e.param, param);
      assert.match(e.message, new RegExp(param));
      return true;
    });
  }
});

test('several prompts in one completion request: one choice per prompt and n, numbered in order', async () => {
  const prompts = golden.slice(0, 3).map((g) => g.prompt);
  const alone = [];
  for (const prompt of prompts)
    alone.push((await client.completions.create({ model, prompt, max_tokens: 6, temperature: 0 })).choices[0].text);
  const r = await client.completions.create({ model, prompt: prompts, max_tokens: 6, temperature: 0, n: 2 });
  assert.equal(r.choices.length, 6);
  r.choices.forEach((c, i) => {
    assert.equal(c.index, i);
    assert.equal(c.text, alone[Math.floor(i / 2)], `choice ${i}`);
  });
  const promptTokens = golden.slice(0, 3).reduce((sum, g) => sum + g.prompt_ids.length, 0);
  assert.equal(r.usage.prompt_tokens, promptTokens);
  assert.equal(r.usage.completion_tokens, 36);
  // Token-id lists too, and streamed: each choice index ends exactly once.
  const ids = golden.slice(0, 2).map((g) => g.prompt_ids);
  const chunks = await collect(await client.completions.create({ model, prompt: ids, max_tokens: 4, temperature: 0, stream: true }));
  const text = ['', ''];
  const ends = [0, 0];
  for (const ch of chunks) for (const c of ch.choices) {
    text[c.index] += c.text;
    if (c.finish_reason) ends[c.index] += 1;
  }
  assert.deepEqual(ends, [1, 1]);
  const byIds = await client.completions.create({ model, prompt: ids, max_tokens: 4, temperature: 0 });
  assert.deepEqual(text, byIds.choices.map((c) => c.text));
});

test('bad requests are 400 with the field named', async () => {
  const cases = [
    [{ prompt: 'x', max_tokens: -1 }, 'max_tokens'],
    [{ prompt: 'x', temperature: -0.5 }, 'temperature'],
    [{ prompt: 'x', temperature: 'hot' }, 'temperature'],
    [{ prompt: 'x', top_p: 1.5 }, 'top_p'],
    [{ prompt: 'x', n: 0 }, 'n'],
    [{ prompt: 'x', stop: 5 }, 'stop'],
    [{ prompt: 'x', max_tokens: 100000 }, 'max_tokens'],
    [{ prompt: [1, 2, 99999] }, 'prompt'],
    [{ prompt: 'x', logprobs: 50 }, 'logprobs'],
  ];
  for (const [body, param] of cases) {
    await assert.rejects(client.completions.create({ model, ...body }), (e) => {
      assert.ok(e instanceof OpenAI.BadRequestError, `${JSON.stringify(body)}: ${e}`);
      assert.equal(e.status, 400);
      assert.equal(e.error?.param ?? e.param, param, JSON.stringify(body));
      assert.match(e.message, new RegExp(param));
      return true;
    });
  }
  await assert.rejects(client.chat.completions.create({ model, messages: [{ role: 'wizard', content: 'x' }] }),
    (e) => e instanceof OpenAI.BadRequestError && /wizard/.test(e.message));
  await assert.rejects(client.chat.completions.create({ model, messages: [] }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'messages');
});

test('an unknown model is 404', async () => {
  await assert.rejects(client.completions.create({ model: 'no-such-model', prompt: 'x' }),
    (e) => e instanceof OpenAI.NotFoundError && e.status === 404 && e.code === 'model_not_found');
});
