// Structured outputs through the clients people build on, against `pagoda serve` (stories260K): the OpenAI
// client's chat.completions.parse with a zod schema (and its streaming helper), the Vercel AI SDK's generateObject
// and streamObject with @ai-sdk/openai-compatible, LangChain's withStructuredOutput (invoke and stream); raw
// json_object / json_schema / grammar / guided_choice requests; and bad constraints, which are 400s naming the
// field. The model is tiny, so what it writes means little; what is tested is that every client parses it.
// Env: PAGODA_URL, PAGODA_MODEL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { generateObject, streamObject } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { ChatOpenAI } from '@langchain/openai';

const url = process.env.PAGODA_URL;
const model = process.env.PAGODA_MODEL;
const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 });

// Bounded strings and numbers, so a tiny model finishes the object within max_tokens.
const Pet = z.object({
  name: z.string().max(10),
  kind: z.enum(['dog', 'cat', 'bird']),
  age: z.number().int().min(0).max(30),
  friendly: z.boolean(),
  toys: z.array(z.string().max(8)).max(2),
});
const prompt = 'Lily has a pet. Describe it as JSON.';

function checkPet(p) {
  assert.equal(Pet.safeParse(p).success, true, JSON.stringify(p));
}

async function post(path, body) {
  const r = await fetch(url + path, { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body) });
  return { status: r.status, json: await r.json() };
}

test('OpenAI client: chat.completions.parse with a zod schema', async () => {
  const r = await client.chat.completions.parse({
    model, messages: [{ role: 'user', content: prompt }], response_format: zodResponseFormat(Pet, 'pet'),
    max_tokens: 200, temperature: 0,
  });
  assert.equal(r.choices[0].finish_reason, 'stop');
  checkPet(r.choices[0].message.parsed);
});

test('OpenAI client: the streaming helper parses the streamed object', async () => {
  const stream = client.chat.completions.stream({
    model, messages: [{ role: 'user', content: prompt }], response_format: zodResponseFormat(Pet, 'pet'),
    max_tokens: 200, temperature: 0.7, seed: 3,
  });
  const final = await stream.finalChatCompletion();
  checkPet(final.choices[0].message.parsed);
});

test('Vercel AI SDK: generateObject and streamObject', async () => {
  const provider = createOpenAICompatible({ name: 'pagoda', baseURL: `${url}/v1`, supportsStructuredOutputs: true });
  const { object } = await generateObject({ model: provider(model), schema: Pet, prompt, temperature: 0,
    maxOutputTokens: 200, maxRetries: 0 });
  checkPet(object);
  const streamed = streamObject({ model: provider(model), schema: Pet, prompt, temperature: 0.5, seed: 11,
    maxOutputTokens: 200, maxRetries: 0 });
  let partials = 0;
  for await (const partial of streamed.partialObjectStream) partials += partial ? 1 : 0;  // the stream is read lazily
  assert.ok(partials > 1, `${partials} partial objects`);
  checkPet(await streamed.object);
});

test('LangChain: withStructuredOutput, invoke and stream', async () => {
  const llm = new ChatOpenAI({ model, apiKey: 'unused', temperature: 0, maxTokens: 200, maxRetries: 0,
    configuration: { baseURL: `${url}/v1` } });
  const structured = llm.withStructuredOutput(Pet, { method: 'jsonSchema', name: 'pet' });
  checkPet(await structured.invoke(prompt));
  let last;
  for await (const chunk of await structured.stream(prompt)) last = chunk;
  checkPet(last);
});

test('raw requests: json_object, json_schema, grammar and guided_choice, streamed and not', async () => {
  const obj = await post('/v1/completions', { prompt: 'Once upon a time', max_tokens: 120, temperature: 0,
    response_format: { type: 'json_object' } });
  assert.equal(obj.status, 200, JSON.stringify(obj.json));
  const text = obj.json.choices[0].text;
  if (obj.json.choices[0].finish_reason === 'stop') assert.equal(typeof JSON.parse(text), 'object');
  else assert.equal(text.trimStart()[0], '{');
  const schema = await post('/v1/completions', { prompt: 'Tom is', max_tokens: 60, temperature: 0,
    json_schema: { type: 'object', properties: { n: { type: 'integer', minimum: 0, maximum: 99 } }, required: ['n'] } });
  assert.equal(schema.json.choices[0].finish_reason, 'stop');
  assert.ok(Number.isInteger(JSON.parse(schema.json.choices[0].text).n));
  const choice = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'Yes or no?' }],
    guided_choice: ['yes', 'no', 'maybe'], temperature: 0 });
  assert.ok(['yes', 'no', 'maybe'].includes(choice.json.choices[0].message.content), JSON.stringify(choice.json));
  assert.equal(choice.json.choices[0].finish_reason, 'stop');
  const stream = await client.completions.create({ model, prompt: 'The cat', max_tokens: 40, temperature: 0,
    stream: true, grammar: 'root ::= [a-z]+ (" " [a-z]+){2} "."' });
  let streamed = '';
  for await (const chunk of stream) streamed += chunk.choices[0]?.text ?? '';
  assert.match(streamed, /^[a-z]+( [a-z]+){2}\.$/);
});

test('bad constraints are 400s that name the field and the problem, quickly', async () => {
  const user = [{ role: 'user', content: 'x' }];
  const cases = [
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object',
      properties: { a: { type: 'string', format: 'hostname' } } } } } }, 'response_format', 'hostname'],
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { not: {} } } } },
      'response_format', "'not'"],
    [{ response_format: { type: 'yaml' } }, 'response_format', 'yaml'],
    [{ grammar: 'root ::= "a" | (' }, 'grammar', 'line 1'],
    [{ grammar: 'root ::= root "a"' }, 'grammar', 'left-recursive'],
    [{ json_schema: { type: 'array', minItems: 5, maxItems: 2 } }, 'json_schema', 'maxItems'],
    [{ guided_choice: 'yes' }, 'guided_choice', 'list'],
  ];
  for (const [extra, param, needle] of cases) {
    const r = await post('/v1/chat/completions', { messages: user, ...extra });
    assert.equal(r.status, 400, JSON.stringify(extra));
    assert.equal(r.json.error.param, param);
    assert.ok(r.json.error.message.includes(needle), r.json.error.message);
  }
  // 100,000-deep nesting and a 1 MiB schema: refused fast.
  const started = Date.now();
  const deep = `{"messages": [{"role": "user", "content": "x"}], "json_schema": ${'{"items": '.repeat(100000)}{}${'}'.repeat(100000)}}`;
  const d = await post('/v1/chat/completions', deep);
  assert.equal(d.status, 400);
  assert.match(d.json.error.message, /nests deeper/);
  const properties = {};
  for (let i = 0; i < 20000; i++) properties[`field_${i}_${'x'.repeat(30)}`] = { type: 'string' };
  const big = await post('/v1/chat/completions', { messages: user, json_schema: { type: 'object', properties } });
  assert.equal(big.status, 400);
  assert.equal(big.json.error.param, 'json_schema');
  assert.ok(Date.now() - started < 10000, `took ${Date.now() - started} ms`);
  const health = await fetch(`${url}/health`);
  assert.equal(health.status, 200);
});
