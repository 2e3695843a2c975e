// No field silently ignored: every field of each endpoint's documented request schema, read from the official
// clients' own type definitions (openai's ChatCompletionCreateParamsBase, CompletionCreateParamsBase,
// ResponseCreateParamsBase, ChatCompletionStreamOptions; @anthropic-ai/sdk's MessageCreateParamsBase and
// MessageCountTokensParams), is either implemented (a valid value is served: 200) or refused (every value of every
// JSON type is a 400 naming it). A field the schema gains in a new client version fails here until it is one or
// the other. Env: PAGODA_URL (the default server), PAGODA_MODEL_PATH.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const model = path.basename(process.env.PAGODA_MODEL_PATH, '.gguf');
const nodeModules = path.join(path.dirname(fileURLToPath(import.meta.url)), 'node_modules');

// The property names of `export interface NAME { ... }` in a client's .d.ts.
function documentedFields(pkgFile, iface) {
  const lines = fs.readFileSync(path.join(nodeModules, pkgFile), 'utf8').split('\n');
  const start = lines.findIndex((l) => l.startsWith(`export interface ${iface} `));
  assert.ok(start >= 0, `${iface} in ${pkgFile}`);
  const out = [];
  for (let i = start + 1; i < lines.length && lines[i] !== '}'; ++i) {
    const m = /^    (\w+)\??:/.exec(lines[i]);
    if (m) out.push(m[1]);
  }
  assert.ok(out.length >= 2, `${iface}: ${out}`);
  return out;
}

const weather = { type: 'object', properties: { city: { type: 'string', maxLength: 8 } }, required: ['city'] };
const chatTool = [{ type: 'function', function: { name: 'get_weather', parameters: weather } }];
const user = [{ role: 'user', content: 'Hi' }];

// Per endpoint: the base body, the implemented fields with a value each (null: the field is in the base body), and
// for the fields implemented at one value only, a value that is refused.
const endpoints = [
  {
    name: 'chat completions', url: '/v1/chat/completions',
    schema: ['openai/resources/chat/completions/completions.d.ts', 'ChatCompletionCreateParamsBase'],
    base: { model, messages: user, max_tokens: 2 },
    implemented: { messages: null, model: null, max_tokens: null, frequency_penalty: 0.5, presence_penalty: 0.5,
      logit_bias: { 5: 1 }, logprobs: true, top_logprobs: 2, max_completion_tokens: 2, n: 2, seed: 3, stop: ['x'],
      stream: true, stream_options: { include_usage: true }, temperature: 0.5, top_p: 0.9, user: 'u',
      response_format: { type: 'json_object' }, tools: chatTool, tool_choice: 'auto', parallel_tool_calls: false },
    refusedValues: {},
    errorParam: (j) => j.error.param,
  },
  {
    name: 'chat stream_options', url: '/v1/chat/completions', nested: 'stream_options',
    schema: ['openai/resources/chat/completions/completions.d.ts', 'ChatCompletionStreamOptions'],
    base: { model, messages: user, max_tokens: 2, stream: true },
    implemented: { include_usage: true, include_obfuscation: false },
    refusedValues: { include_obfuscation: true },
    errorParam: (j) => j.error.param,
  },
  {
    name: 'completions', url: '/v1/completions',
    schema: ['openai/resources/completions.d.ts', 'CompletionCreateParamsBase'],
    base: { model, prompt: 'Hi', max_tokens: 2 },
    implemented: { model: null, prompt: null, max_tokens: null, best_of: 1, echo: false, frequency_penalty: 0.5,
      presence_penalty: 0.5, logit_bias: { 5: 1 }, logprobs: 2, n: 2, seed: 3, stop: ['x'], stream: true,
      stream_options: { include_usage: true }, temperature: 0.5, top_p: 0.9, user: 'u' },
    refusedValues: { echo: true, best_of: 3 },
    errorParam: (j) => j.error.param,
  },
  {
    name: 'responses', url: '/v1/responses',
    schema: ['openai/resources/responses/responses.d.ts', 'ResponseCreateParamsBase'],
    base: { model, input: 'Hi', max_output_tokens: 2 },
    implemented: { model: null, input: null, max_output_tokens: null, instructions: 'Be brief.', metadata: { a: 'b' },
      parallel_tool_calls: false, stream: true, temperature: 0.5, top_p: 0.9, user: 'u', store: false,
      text: { format: { type: 'json_object' } }, tools: [{ type: 'function', name: 'f', parameters: weather }],
      tool_choice: 'auto', truncation: 'disabled', include: [], background: false, reasoning: {},
      service_tier: 'auto', stream_options: { include_obfuscation: false }, prompt_cache_key: 'k',
      safety_identifier: 's' },
    refusedValues: { store: true, truncation: 'auto', include: ['message.output_text.logprobs'], background: true,
      reasoning: { effort: 'high' }, service_tier: 'priority', stream_options: { include_obfuscation: true } },
    errorParam: (j) => j.error.param,
  },
  {
    name: 'messages', url: '/v1/messages',
    schema: ['@anthropic-ai/sdk/resources/messages/messages.d.ts', 'MessageCreateParamsBase'],
    base: { model, messages: user, max_tokens: 2 },
    implemented: { model: null, messages: null, max_tokens: null, system: 'Be brief.', stop_sequences: ['x'],
      stream: true, metadata: { user_id: 'u' }, service_tier: 'auto', cache_control: { type: 'ephemeral' },
      thinking: { type: 'disabled' }, tools: [{ name: 'f', input_schema: weather }], tool_choice: { type: 'auto' },
      output_config: { format: { type: 'json_schema', schema: weather } }, temperature: 0.5, top_p: 0.9, top_k: 5 },
    refusedValues: { thinking: { type: 'enabled', budget_tokens: 1024 }, service_tier: 'priority',
      output_config: { effort: 'high' } },
    errorParam: null,  // Anthropic's shape has no param: the message names the field
  },
  {
    name: 'messages count_tokens', url: '/v1/messages/count_tokens',
    schema: ['@anthropic-ai/sdk/resources/messages/messages.d.ts', 'MessageCountTokensParams'],
    base: { model, messages: user },
    implemented: { model: null, messages: null, system: 'Be brief.', cache_control: { type: 'ephemeral' },
      thinking: { type: 'disabled' }, tools: [{ name: 'f', input_schema: weather }], tool_choice: { type: 'auto' },
      output_config: { format: { type: 'json_schema', schema: weather } } },
    refusedValues: {},
    errorParam: null,
  },
];

async function post(url, body) {
  const r = await fetch(`${process.env.PAGODA_URL}${url}`, { method: 'POST',
    headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, text };
}

for (const e of endpoints) {
  test(`${e.name}: every documented field is implemented or a 400 naming it`, async () => {
    const fields = documentedFields(...e.schema);
    // stream_options goes with stream: true, top_logprobs with logprobs, chat's tool_choice with tools (alone each
    // is a 400 of its own).
    const companion = { stream_options: { stream: true }, top_logprobs: { logprobs: true },
      tool_choice: e.url === '/v1/chat/completions' ? { tools: chatTool } : {} };
    const withField = (f, v) => (e.nested ? { ...e.base, [e.nested]: { [f]: v } }
      : { ...e.base, ...(companion[f] ?? {}), [f]: v });
    const refusedNames = [];
    for (const f of fields) {
      if (f in e.implemented) {
        if (e.implemented[f] === null) {
          assert.ok(f in e.base, `${f} is in the base body`);
          continue;
        }
        const r = await post(e.url, withField(f, e.implemented[f]));
        assert.equal(r.status, 200, `${e.name}.${f} = ${JSON.stringify(e.implemented[f])}: ${r.text.slice(0, 300)}`);
        if (!(f in e.refusedValues)) continue;
      }
      const values = f in e.refusedValues ? [e.refusedValues[f]] : [true, 7, 'x', { a: 1 }, [1]];
      for (const v of values) {
        const r = await post(e.url, withField(f, v));
        assert.equal(r.status, 400, `${e.name}.${f} = ${JSON.stringify(v)} must be refused: ${r.text.slice(0, 300)}`);
        const j = JSON.parse(r.text);
        const want = e.nested ? e.nested : f;
        if (e.errorParam) assert.equal(e.errorParam(j), want, `${e.name}.${f}: ${r.text}`);
        else {
          assert.equal(j.type, 'error');
          assert.ok(j.error.message.includes(f), `${e.name}.${f}: ${j.error.message}`);
        }
      }
      if (!(f in e.implemented)) refusedNames.push(f);
    }
    // Implemented fields the schema does not list (pagoda's and vLLM's extensions) are not walked here; the
    // schema's own list is the point.
    assert.ok(fields.length > refusedNames.length, `${e.name}: some fields are implemented`);
  });
}

test('stream_options.continuous_usage_stats (vLLM\'s): every chunk carries the usage so far', async () => {
  const r = await fetch(`${process.env.PAGODA_URL}/v1/chat/completions`, { method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model, messages: user, max_tokens: 6, temperature: 0, stream: true,
      stream_options: { continuous_usage_stats: true } }) });
  const chunks = (await r.text()).split('\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)));
  assert.ok(chunks.length >= 2);
  let last = -1;
  for (const c of chunks) {
    assert.ok(c.usage, JSON.stringify(c));
    assert.equal(c.usage.total_tokens, c.usage.prompt_tokens + c.usage.completion_tokens);
    assert.ok(c.usage.completion_tokens >= last, 'the count only grows');
    last = c.usage.completion_tokens;
  }
  assert.equal(last, 6);
});

test('/apply-template names the model it serves, like every endpoint', async () => {
  const ok = await post('/apply-template', { model, messages: user });
  assert.equal(ok.status, 200);
  const other = await post('/apply-template', { model: 'gpt-4o', messages: user });
  assert.equal(other.status, 404);
  assert.equal(JSON.parse(other.text).error.param, 'model');
});
