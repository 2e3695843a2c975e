// Tool calling through the clients people build on, against `pagoda serve` with Qwen2.5's chat template (the
// hermes <tool_call> format): the AI SDK's generateText / streamText with tools and toolChoice "required",
// LangChain's bindTools (invoke and stream), the OpenAI client with a named tool_choice (streamed deltas too), a
// conversation carrying tool calls and tool results, and the 400s. The model is tiny: "required" and named
// choices are forced by the grammar, so the calls are well-formed and their arguments fit the schema whatever it
// writes. Env: PAGODA_BINARY, PAGODA_MODEL_PATH, PAGODA_SHARED, PAGODA_URL (the default server, no tool format).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import OpenAI from 'openai';
import { z } from 'zod';
import { generateText, streamText, tool as aiTool } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { ChatOpenAI } from '@langchain/openai';
import { tool as lcTool } from '@langchain/core/tools';
import { startServer } from './server_process.mjs';

const template = path.join(process.env.PAGODA_SHARED, 'templates', 'templates', 'qwen2.5-instruct.jinja');
const server = await startServer(['--chat-template-file', template]);
after(() => server.proc.kill('SIGTERM'));
const model = path.basename(process.env.PAGODA_MODEL_PATH, '.gguf');
const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });

const Weather = z.object({ city: z.string().max(12), unit: z.enum(['celsius', 'fahrenheit']) });
const Search = z.object({ query: z.string().max(16), limit: z.number().int().min(1).max(9) });
const openaiTools = [
  { type: 'function', function: { name: 'get_weather', description: 'Current weather in a city',
    parameters: z.toJSONSchema(Weather) } },
  { type: 'function', function: { name: 'search', description: 'Search the web', parameters: z.toJSONSchema(Search) } },
];

function checkCall(name, args) {
  assert.ok(['get_weather', 'search'].includes(name), name);
  assert.equal((name === 'get_weather' ? Weather : Search).safeParse(args).success, true, JSON.stringify(args));
}

test('the template is read for its tool-call format', () => {
  assert.match(server.log(), /chat template jinja/);
});

test('OpenAI client: a named tool_choice gives that call, non-streamed and streamed', async () => {
  const named = { type: 'function', function: { name: 'get_weather' } };
  const r = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Weather in Paris?' }],
    tools: openaiTools, tool_choice: named, parallel_tool_calls: false, max_tokens: 120, temperature: 0 });
  const choice = r.choices[0];
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.tool_calls.length, 1);
  const call = choice.message.tool_calls[0];
  assert.match(call.id, /^call_[0-9a-f]{24}$/);
  assert.equal(call.type, 'function');
  assert.equal(call.function.name, 'get_weather');
  checkCall('get_weather', JSON.parse(call.function.arguments));
  const stream = await client.chat.completions.create({ model, stream: true, tools: openaiTools, tool_choice: named,
    parallel_tool_calls: false, messages: [{ role: 'user', content: 'Weather in Paris?' }], max_tokens: 120, temperature: 0 });
  const deltas = [];
  let finish, chunksWithArgs = 0;
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (c?.delta?.tool_calls) {
      deltas.push(...c.delta.tool_calls);
      if (c.delta.tool_calls.some((d) => d.function?.arguments)) ++chunksWithArgs;
    }
    if (c?.finish_reason) finish = c.finish_reason;
  }
  assert.equal(finish, 'tool_calls');
  // The call's header first (id, type, name, empty arguments), then its arguments as the tokens come.
  assert.equal(deltas[0].index, 0);
  assert.equal(deltas[0].type, 'function');
  assert.equal(deltas[0].function.arguments, '');
  assert.ok(chunksWithArgs > 3, `arguments streamed in ${chunksWithArgs} chunks`);
  assert.ok(deltas.slice(1).every((d) => d.index === 0 && d.id === undefined && d.function.name === undefined));
  assert.equal(deltas[0].id, call.id === deltas[0].id ? call.id : deltas[0].id);
  assert.equal(deltas.map((d) => d.function.name).join(''), 'get_weather');
  assert.deepEqual(JSON.parse(deltas.map((d) => d.function.arguments).join('')), JSON.parse(call.function.arguments));
});

for (const [label, base] of [['hermes template', () => server.url], ['generic format', () => process.env.PAGODA_URL]]) {
test(`${label}: Vercel AI SDK: generateText and streamText with tools and toolChoice "required"`, async () => {
  const provider = createOpenAICompatible({ name: 'pagoda', baseURL: `${base()}/v1` });
  const tools = { get_weather: aiTool({ description: 'Current weather in a city', inputSchema: Weather }),
    search: aiTool({ description: 'Search the web', inputSchema: Search }) };
  // Parallel calls run until one is cut off by maxOutputTokens (the tiny model never stops): that last call is
  // partial, the SDK marks it invalid, and the finish reason says 'length'. Every complete call fits its schema.
  const checkCalls = (calls, finishReason) => {
    const complete = calls.filter((c) => !c.invalid);
    assert.ok(complete.length >= 1, JSON.stringify(calls));
    for (const c of complete) checkCall(c.toolName, c.input);
    assert.ok(calls.length - complete.length <= 1, 'at most the last call is cut off');
    if (complete.length < calls.length) assert.equal(finishReason, 'length');
    else assert.equal(finishReason, 'tool-calls');
  };
  const r = await generateText({ model: provider(model), tools, toolChoice: 'required', prompt: 'Weather in Oslo?',
    temperature: 0, maxOutputTokens: 150, maxRetries: 0 });
  checkCalls(r.toolCalls, r.finishReason);
  const s = streamText({ model: provider(model), tools, toolChoice: 'required', prompt: 'Search for cats',
    temperature: 0.7, seed: 4, maxOutputTokens: 150, maxRetries: 0 });
  for await (const _ of s.fullStream) { /* read the stream */ }
  checkCalls(await s.toolCalls, await s.finishReason);
});

test(`${label}: LangChain: bindTools with tool_choice "required", invoke and stream`, async () => {
  const llm = new ChatOpenAI({ model, apiKey: 'unused', temperature: 0, maxTokens: 150, maxRetries: 0,
    configuration: { baseURL: `${base()}/v1` } });
  const weather = lcTool(async () => 'sunny', { name: 'get_weather', description: 'Current weather in a city',
    schema: Weather });
  const search = lcTool(async () => 'results', { name: 'search', description: 'Search the web', schema: Search });
  const bound = llm.bindTools([weather, search], { tool_choice: 'required' });
  // As with the AI SDK: calls run until maxTokens cuts one off; only that last call may be partial (LangChain
  // reads partial JSON leniently), and only when the finish reason says 'length'.
  const checkAll = (m) => {
    assert.ok(m.tool_calls.length >= 1, JSON.stringify(m));
    const cut = m.response_metadata?.finish_reason === 'length';
    m.tool_calls.forEach((c, i) => { if (!(cut && i === m.tool_calls.length - 1)) checkCall(c.name, c.args); });
  };
  checkAll(await bound.invoke('Weather in Rome?'));
  let merged;
  for await (const chunk of await bound.stream('Search for dogs')) merged = merged ? merged.concat(chunk) : chunk;
  checkAll(merged);
});
}

test('a conversation with tool calls and tool results continues', async () => {
  const r = await client.chat.completions.create({ model, tools: openaiTools, max_tokens: 12, temperature: 0,
    messages: [
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function',
        function: { name: 'get_weather', arguments: '{"city": "Paris", "unit": "celsius"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '{"temperature": 21}' },
    ] });
  assert.ok(['stop', 'length', 'tool_calls'].includes(r.choices[0].finish_reason));
  assert.ok(r.usage.prompt_tokens > 100);  // the tools and the call were rendered into the prompt
});

test('tool_choice "none" renders the tools but neither forces nor parses a call', async () => {
  const messages = [{ role: 'user', content: 'Weather in Paris?' }];
  const r = await client.chat.completions.create({ model, tools: openaiTools, tool_choice: 'none', max_tokens: 8,
    temperature: 0, messages });
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason), r.choices[0].finish_reason);
  assert.ok(!r.choices[0].message.tool_calls?.length, JSON.stringify(r.choices[0].message));
  assert.equal(typeof r.choices[0].message.content, 'string');
  const without = await client.chat.completions.create({ model, max_tokens: 1, temperature: 0, messages });
  assert.ok(r.usage.prompt_tokens > without.usage.prompt_tokens + 50, 'the tools are rendered into the prompt');
  // The built-in chatml family has no tool format: the generic one shows the tools in the system turn.
  const plain = await fetch(`${process.env.PAGODA_URL}/v1/chat/completions`, { method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ messages, tools: openaiTools, tool_choice: 'none', max_tokens: 2 }) });
  assert.equal(plain.status, 200);
  const plainBody = await plain.json();
  assert.ok(!plainBody.choices[0].message.tool_calls, JSON.stringify(plainBody));
  assert.ok(plainBody.usage.prompt_tokens > 100, 'the tools are in the system turn');
});

test('tool errors are 400s naming the field', async () => {
  const user = [{ role: 'user', content: 'x' }];
  const cases = [
    [{ tools: [{ type: 'function', function: {} }] }, 'tools'],
    [{ tools: [{ type: 'retrieval' }] }, 'tools'],
    [{ tools: openaiTools, tool_choice: { type: 'function', function: { name: 'nope' } } }, 'tool_choice'],
    [{ tools: openaiTools, tool_choice: 'sometimes' }, 'tool_choice'],
    [{ tools: openaiTools, tool_choice: 'required', response_format: { type: 'json_object' } }, 'tool_choice'],
    [{ tools: openaiTools, parallel_tool_calls: 'yes' }, 'parallel_tool_calls'],
    [{ functions: [{ name: 'f' }] }, 'functions'],
  ];
  for (const [extra, param] of cases) {
    const r = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST',
      headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ messages: user, ...extra }) });
    const j = await r.json();
    assert.equal(r.status, 400, JSON.stringify(extra));
    assert.equal(j.error.param, param, JSON.stringify(j));
  }
});

// The default server renders with the built-in chatml, which has no tool-call format: the generic format
// (docs/server.md) puts the tools and the reply schema in the system turn and holds every reply to that schema.
const plainClient = new OpenAI({ baseURL: `${process.env.PAGODA_URL}/v1`, apiKey: 'unused', maxRetries: 0 });

test('generic format: "auto" answers with a call or a message, streamed and not, the same reading', async () => {
  const kinds = new Set();
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    const req = { model, messages: [{ role: 'user', content: 'Weather in Paris?' }], tools: openaiTools,
      max_tokens: 100, temperature: 0.9, seed };
    const r = await plainClient.chat.completions.create(req);
    const choice = r.choices[0];
    const calls = choice.message.tool_calls ?? [];
    for (const c of calls) assert.match(c.id, /^call_[0-9a-f]{24}$/);
    if (choice.finish_reason === 'tool_calls') {
      assert.ok(calls.length >= 1);
      assert.equal(choice.message.content, null);
      for (const c of calls) checkCall(c.function.name, JSON.parse(c.function.arguments));
    } else if (calls.length === 0) {
      assert.equal(typeof choice.message.content, 'string', JSON.stringify(choice));
      assert.ok(!choice.message.content.startsWith('{"response"'), 'the message is unwrapped');
    } else {
      assert.equal(choice.finish_reason, 'length', 'only max_tokens leaves a call unfinished');
    }
    // The streamed reply (same seed) is the same reply, content and calls.
    let content = '';
    const args = [];
    const names = [];
    let finish;
    for await (const chunk of await plainClient.chat.completions.create({ ...req, stream: true })) {
      const c = chunk.choices[0];
      if (c?.delta?.content) content += c.delta.content;
      for (const d of c?.delta?.tool_calls ?? []) {
        if (d.function?.name) names[d.index] = d.function.name;
        args[d.index] = (args[d.index] ?? '') + (d.function?.arguments ?? '');
      }
      if (c?.finish_reason) finish = c.finish_reason;
    }
    assert.equal(finish, choice.finish_reason);
    assert.equal(content, choice.message.content ?? '');
    assert.deepEqual(names, calls.map((c) => c.function.name));
    assert.deepEqual(args, calls.map((c) => c.function.arguments));
    kinds.add(choice.finish_reason);
  }
  assert.ok(kinds.size >= 2, `the seeds show more than one kind of reply: ${[...kinds]}`);
});

test('generic format: "required" and a named function give calls; history round-trips', async () => {
  const r = await plainClient.chat.completions.create({ model, messages: [{ role: 'user', content: 'Weather?' }],
    tools: openaiTools, tool_choice: { type: 'function', function: { name: 'search' } }, parallel_tool_calls: false,
    max_tokens: 80, temperature: 0 });
  assert.equal(r.choices[0].finish_reason, 'tool_calls', JSON.stringify(r));
  assert.equal(r.choices[0].message.tool_calls.length, 1);
  const call = r.choices[0].message.tool_calls[0];
  assert.equal(call.function.name, 'search');
  checkCall('search', JSON.parse(call.function.arguments));
  // The history carries a fixed call id, not the random one of the reply: the id is part of the prompt, and with a
  // random one the greedy reply (a toy model's) changed from run to run, now and then past max_tokens.
  const fixed = { ...call, id: 'call_0123456789abcdef01234567' };
  const next = await plainClient.chat.completions.create({ model, tools: openaiTools, tool_choice: 'required',
    max_tokens: 80, temperature: 0, messages: [
      { role: 'user', content: 'Weather?' }, { role: 'assistant', content: null, tool_calls: [fixed] },
      { role: 'tool', tool_call_id: fixed.id, content: 'no results' }] });
  assert.equal(next.choices[0].finish_reason, 'tool_calls');
  for (const c of next.choices[0].message.tool_calls) checkCall(c.function.name, JSON.parse(c.function.arguments));
  assert.ok(next.usage.prompt_tokens > r.usage.prompt_tokens, 'the call and its result are in the prompt');
});

// Llama 4's and Qwen3-Coder's own formats (templates from ../shared): forced calls in the template's own shape,
// parsed back into tool_calls, streamed and not the same reading.
for (const [family, format] of [['llama4-instruct', 'llama-4'], ['qwen3-coder', 'qwen3-coder']]) {
  test(`${family}: native ${format} calls, streamed and not`, async () => {
    const s = await startServer(['--chat-template-file',
      path.join(process.env.PAGODA_SHARED, 'templates', 'templates', `${family}.jinja`)]);
    try {
      assert.match(s.log(), new RegExp(`tool-call format ${format}`));
      const c = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'unused', maxRetries: 0 });
      const req = { model, messages: [{ role: 'user', content: 'Weather in Paris?' }], tools: openaiTools,
        tool_choice: { type: 'function', function: { name: 'get_weather' } }, parallel_tool_calls: false,
        max_tokens: 200, temperature: 0 };
      const r = await c.chat.completions.create(req);
      assert.equal(r.choices[0].finish_reason, 'tool_calls', JSON.stringify(r.choices[0]));
      const call = r.choices[0].message.tool_calls[0];
      assert.equal(call.function.name, 'get_weather');
      checkCall('get_weather', JSON.parse(call.function.arguments));
      let args = '', name = '', finish;
      for await (const chunk of await c.chat.completions.create({ ...req, stream: true })) {
        const ch = chunk.choices[0];
        for (const d of ch?.delta?.tool_calls ?? []) {
          name += d.function?.name ?? '';
          args += d.function?.arguments ?? '';
        }
        if (ch?.finish_reason) finish = ch.finish_reason;
      }
      assert.equal(finish, 'tool_calls');
      assert.equal(name, 'get_weather');
      assert.deepEqual(JSON.parse(args), JSON.parse(call.function.arguments));
      // The call goes back through the template in its own format.
      const next = await c.chat.completions.create({ model, tools: openaiTools, max_tokens: 4, temperature: 0,
        messages: [...req.messages, r.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'sunny' }] });
      assert.ok(next.usage.prompt_tokens > r.usage.prompt_tokens);
    } finally {
      s.proc.kill('SIGTERM');
    }
  });
}
