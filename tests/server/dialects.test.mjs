// The Responses API and Anthropic's Messages API through their official clients (npm `openai` responses.create,
// `@anthropic-ai/sdk` messages.create / stream / countTokens), streamed and not, with a function tool round trip,
// against the default server (stories260K, built-in chatml: the generic tool format) and a server with Qwen2.5's
// template (native hermes calls). Also: the typed SSE events in their documented order, and every error in the
// API's own shape. Env: PAGODA_BINARY, PAGODA_MODEL_PATH, PAGODA_SHARED, PAGODA_URL (the default server).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startServer } from './server_process.mjs';

const model = path.basename(process.env.PAGODA_MODEL_PATH, '.gguf');
const template = path.join(process.env.PAGODA_SHARED, 'templates', 'templates', 'qwen2.5-instruct.jinja');
const hermes = await startServer(['--chat-template-file', template]);
const keyed = await startServer(['--api-key', 'sekrit']);
after(() => { hermes.proc.kill('SIGTERM'); keyed.proc.kill('SIGTERM'); });

const servers = [['generic format', process.env.PAGODA_URL], ['hermes template', hermes.url]];
const weatherSchema = { type: 'object', properties: { city: { type: 'string', maxLength: 12 } }, required: ['city'],
  additionalProperties: false };

// Reads a Responses stream: every event in order, and the checks every stream must pass.
async function readResponseEvents(stream) {
  const events = [];
  for await (const ev of stream) events.push(ev);
  events.forEach((ev, i) => assert.equal(ev.sequence_number, i, `sequence_number of event ${i} (${ev.type})`));
  assert.equal(events[0].type, 'response.created');
  assert.equal(events[1].type, 'response.in_progress');
  const last = events.at(-1);
  assert.ok(['response.completed', 'response.incomplete'].includes(last.type), last.type);
  // Per output item: added, its parts and deltas, done; items one after another.
  let open = null;
  for (const ev of events.slice(2, -1)) {
    if (ev.type === 'response.output_item.added') {
      assert.equal(open, null, 'an item opens only after the previous one is done');
      open = { item: ev.item, index: ev.output_index, text: '', args: '' };
    } else if (ev.type === 'response.output_item.done') {
      assert.equal(ev.output_index, open.index);
      assert.deepEqual(ev.item, last.response.output[ev.output_index]);
      if (ev.item.type === 'message') assert.equal(ev.item.content[0].text, open.text);
      else assert.equal(ev.item.arguments, open.args);
      open = null;
    } else {
      assert.ok(open, `${ev.type} inside an item`);
      if (ev.type === 'response.output_text.delta') open.text += ev.delta;
      if (ev.type === 'response.function_call_arguments.delta') open.args += ev.delta;
      if (ev.type === 'response.output_text.done') assert.equal(ev.text, open.text);
      if (ev.type === 'response.function_call_arguments.done') assert.equal(ev.arguments, open.args);
    }
  }
  assert.equal(open, null);
  return { events, response: last.response };
}

for (const [name, url] of servers) {
  const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 });
  const anthropic = new Anthropic({ baseURL: url, apiKey: 'unused', maxRetries: 0 });

  test(`${name}: responses.create gives the chat endpoint's reply, streamed and not`, async () => {
    const r = await openai.responses.create({ model, input: 'Once upon a time', instructions: 'Tell a story.',
      max_output_tokens: 24, temperature: 0, metadata: { run: 'test' } });
    assert.equal(r.object, 'response');
    assert.match(r.id, /^resp_/);
    assert.deepEqual(r.metadata, { run: 'test' });
    assert.equal(r.output[0].type, 'message');
    const chat = await openai.chat.completions.create({ model, max_tokens: 24, temperature: 0,
      messages: [{ role: 'system', content: 'Tell a story.' }, { role: 'user', content: 'Once upon a time' }] });
    assert.equal(r.output_text, chat.choices[0].message.content);
    assert.equal(r.usage.input_tokens, chat.usage.prompt_tokens);
    assert.equal(r.usage.output_tokens, chat.usage.completion_tokens);
    assert.equal(r.status, chat.choices[0].finish_reason === 'length' ? 'incomplete' : 'completed');
    if (r.status === 'incomplete') assert.equal(r.incomplete_details.reason, 'max_output_tokens');
    const { response } = await readResponseEvents(await openai.responses.create({ model, input: 'Once upon a time',
      instructions: 'Tell a story.', max_output_tokens: 24, temperature: 0, stream: true }));
    assert.deepEqual(response.output.map((o) => o.content[0].text), [r.output_text]);
    // The same counts, but for the cache: the streamed request repeats a prompt the two before it left cached.
    const { input_tokens_details: streamedDetails, ...streamedUsage } = response.usage;
    const { input_tokens_details: firstDetails, ...firstUsage } = r.usage;
    assert.deepEqual(streamedUsage, firstUsage);
    assert.ok(streamedDetails.cached_tokens > 0 && streamedDetails.cached_tokens >= firstDetails.cached_tokens,
      JSON.stringify([r.usage, response.usage]));
  });

  test(`${name}: responses.create with a function tool, round trip, streamed and not`, async () => {
    const tools = [{ type: 'function', name: 'get_weather', description: 'Weather in a city',
      parameters: weatherSchema, strict: true }];
    const input = [{ role: 'user', content: [{ type: 'input_text', text: 'Weather in Oslo?' }] }];
    const r = await openai.responses.create({ model, input, tools, tool_choice: 'required',
      parallel_tool_calls: false, max_output_tokens: 160, temperature: 0 });
    const calls = r.output.filter((o) => o.type === 'function_call');
    assert.equal(calls.length, 1, JSON.stringify(r.output));
    assert.equal(calls[0].name, 'get_weather');
    assert.match(calls[0].call_id, /^call_/);
    assert.equal(typeof JSON.parse(calls[0].arguments).city, 'string');
    // The streamed call is the same call, its arguments in deltas.
    const { events, response } = await readResponseEvents(await openai.responses.create({ model, input, tools,
      tool_choice: 'required', parallel_tool_calls: false, max_output_tokens: 160, temperature: 0, stream: true }));
    assert.ok(events.some((e) => e.type === 'response.function_call_arguments.delta'));
    assert.deepEqual(response.output.map((o) => [o.type, o.name, o.arguments]),
      r.output.map((o) => [o.type, o.name, o.arguments]));
    // The result goes back as a function_call_output item.
    const next = await openai.responses.create({ model, tools, max_output_tokens: 16, temperature: 0,
      input: [...input, ...r.output, { type: 'function_call_output', call_id: calls[0].call_id, output: 'sunny' }] });
    assert.ok(['completed', 'incomplete'].includes(next.status));
    assert.ok(next.usage.input_tokens > r.usage.input_tokens, 'the call and its result are in the prompt');
  });

  test(`${name}: Anthropic messages.create, stream and countTokens agree`, async () => {
    const req = { model, max_tokens: 24, temperature: 0, system: 'Tell a story.',
      messages: [{ role: 'user', content: 'Once upon a time' }] };
    const m = await anthropic.messages.create(req);
    assert.equal(m.type, 'message');
    assert.equal(m.role, 'assistant');
    assert.match(m.id, /^msg_/);
    assert.ok(['end_turn', 'max_tokens'].includes(m.stop_reason), m.stop_reason);
    const chat = await openai.chat.completions.create({ model, max_tokens: 24, temperature: 0,
      messages: [{ role: 'system', content: 'Tell a story.' }, { role: 'user', content: 'Once upon a time' }] });
    assert.equal(m.content.map((b) => b.text).join(''), chat.choices[0].message.content);
    const streamed = await anthropic.messages.stream(req).finalMessage();
    assert.deepEqual(streamed.content, m.content);
    assert.equal(streamed.stop_reason, m.stop_reason);
    assert.equal(streamed.usage.output_tokens, m.usage.output_tokens);
    const counted = await anthropic.messages.countTokens({ model, system: req.system, messages: req.messages });
    // countTokens counts the whole prompt; a message's usage splits it into cache reads and the rest.
    assert.equal(counted.input_tokens, m.usage.input_tokens + m.usage.cache_read_input_tokens, JSON.stringify(m.usage));
    assert.equal(counted.input_tokens, streamed.usage.input_tokens + streamed.usage.cache_read_input_tokens,
      JSON.stringify(streamed.usage));
    // A stop sequence ends the reply and is named.
    const text = m.content.map((b) => b.text).join('');
    const word = text.trim().split(/\s+/)[1];
    if (word) {
      const stopped = await anthropic.messages.create({ ...req, stop_sequences: [word] });
      assert.equal(stopped.stop_reason, 'stop_sequence');
      assert.equal(stopped.stop_sequence, word);
      assert.ok(!stopped.content.map((b) => b.text).join('').includes(word));
    }
  });

  test(`${name}: Anthropic tool use round trip, streamed and not`, async () => {
    const tools = [{ name: 'get_weather', description: 'Weather in a city', input_schema: weatherSchema }];
    const req = { model, max_tokens: 160, temperature: 0, tools, tool_choice: { type: 'tool', name: 'get_weather', disable_parallel_tool_use: true },
      messages: [{ role: 'user', content: 'Weather in Oslo?' }] };
    const m = await anthropic.messages.create(req);
    assert.equal(m.stop_reason, 'tool_use', JSON.stringify(m));
    const use = m.content.find((b) => b.type === 'tool_use');
    assert.match(use.id, /^toolu_/);
    assert.equal(use.name, 'get_weather');
    assert.equal(typeof use.input.city, 'string');
    const streamed = await anthropic.messages.stream(req).finalMessage();
    const blocks = (msg, type) => msg.content.filter((b) => b.type === type).map(({ id, ...rest }) => rest);
    assert.deepEqual(blocks(streamed, 'tool_use'), blocks(m, 'tool_use'), 'input_json_delta pieces join to the same input');
    assert.equal(blocks(streamed, 'text').map((b) => b.text).join(''), blocks(m, 'text').map((b) => b.text).join(''));
    assert.equal(streamed.stop_reason, 'tool_use');
    const next = await anthropic.messages.create({ model, max_tokens: 16, temperature: 0, tools, messages: [
      ...req.messages, { role: 'assistant', content: m.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny' }] }] });
    // Anthropic counts cache reads apart from input_tokens; the follow-up repeats the first turn, which the prefix
    // cache holds.
    const wholeInput = (u) => u.input_tokens + u.cache_read_input_tokens;
    assert.ok(wholeInput(next.usage) > wholeInput(m.usage), JSON.stringify([m.usage, next.usage]));
    assert.ok(next.usage.cache_read_input_tokens > 0, JSON.stringify(next.usage));
    assert.equal(next.usage.cache_read_input_tokens % 16, 0, 'whole blocks of the default block size');
    assert.ok(['end_turn', 'max_tokens', 'tool_use'].includes(next.stop_reason));
  });
}

test('Responses API: fields it does not implement are 400s naming them, in OpenAI\'s shape', async () => {
  const cases = [
    [{ previous_response_id: 'resp_1' }, 'previous_response_id'],
    [{ store: true }, 'store'],
    [{ conversation: 'c' }, 'conversation'],
    [{ tools: [{ type: 'web_search' }] }, 'tools'],
    [{ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'x' }] }] }, 'input'],
    [{ input: [{ type: 'reasoning', summary: [] }] }, 'input'],
    [{ max_output_tokens: 1 << 20 }, 'max_output_tokens'],
    [{ text: { format: { type: 'json_schema', schema: {} } } }, 'text'],
    [{ frobnicate: 1 }, 'frobnicate'],
    [{ include: ['reasoning.encrypted_content'] }, 'include'],
    [{ top_logprobs: 2 }, 'top_logprobs'],
  ];
  for (const [extra, param] of cases) {
    const r = await fetch(`${process.env.PAGODA_URL}/v1/responses`, { method: 'POST',
      headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ model, input: 'x', ...extra }) });
    const j = await r.json();
    assert.equal(r.status, 400, JSON.stringify(extra));
    assert.equal(j.error.param, param, JSON.stringify(j));
    assert.equal(j.error.type, 'invalid_request_error');
    assert.ok(j.error.message.includes(`'${param}'`) || j.error.message.includes(param), j.error.message);
  }
  // The client sees them as its own error class.
  const openai = new OpenAI({ baseURL: `${process.env.PAGODA_URL}/v1`, apiKey: 'unused', maxRetries: 0 });
  await assert.rejects(openai.responses.create({ model, input: 'x', previous_response_id: 'resp_1' }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'previous_response_id');
});

test('Messages API: errors in Anthropic\'s shape, x-api-key accepted', async () => {
  const base = { model, max_tokens: 4, messages: [{ role: 'user', content: 'x' }] };
  const cases = [
    [{ max_tokens: undefined }, 'max_tokens'],
    [{ messages: [{ role: 'user', content: [{ type: 'image', source: {} }] }] }, 'image'],
    [{ thinking: { type: 'enabled', budget_tokens: 1024 } }, 'thinking'],
    [{ tools: [{ type: 'web_search_20250305', name: 'web_search' }] }, 'tools'],
    [{ tool_choice: { type: 'any' } }, 'tool_choice'],
    [{ max_tokens: 1 << 20 }, 'max_tokens'],
    [{ mcp_servers: [] }, 'mcp_servers'],
    [{ model: 'claude-nope' }, 'claude-nope'],
  ];
  for (const [extra, word] of cases) {
    const r = await fetch(`${process.env.PAGODA_URL}/v1/messages`, { method: 'POST',
      headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ ...base, ...extra }) });
    const j = await r.json();
    assert.ok([400, 404].includes(r.status), JSON.stringify(extra));
    assert.equal(j.type, 'error', JSON.stringify(j));
    assert.equal(j.error.type, r.status === 404 ? 'not_found_error' : 'invalid_request_error');
    assert.ok(j.error.message.includes(word), `${word}: ${j.error.message}`);
  }
  const anthropic = new Anthropic({ baseURL: process.env.PAGODA_URL, apiKey: 'unused', maxRetries: 0 });
  await assert.rejects(anthropic.messages.create({ ...base, thinking: { type: 'enabled', budget_tokens: 1024 } }),
    (e) => e instanceof Anthropic.BadRequestError && e.error.error.type === 'invalid_request_error');
  // A server with keys: the SDK's x-api-key works, a wrong key is Anthropic's authentication_error.
  const good = new Anthropic({ baseURL: keyed.url, apiKey: 'sekrit', maxRetries: 0 });
  const m = await good.messages.create(base);
  assert.equal(m.type, 'message');
  const bad = new Anthropic({ baseURL: keyed.url, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(bad.messages.create(base),
    (e) => e instanceof Anthropic.AuthenticationError && e.error.error.type === 'authentication_error');
});
