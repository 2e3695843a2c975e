// The model's chat template through the server: POST /apply-template (llama-server's endpoint) renders exactly what
// jinja2 renders (checked against ../shared/templates/renderings.jsonl), the chat endpoint prompts the model with
// that rendering (greedy chat = greedy completion of the rendered prompt), OpenAI's wire format is adapted for the
// template (tool-call arguments sent as a JSON string), chat_template_kwargs reach the template, and bad input is a
// 400 naming the field. Env: PAGODA_BINARY, PAGODA_MODEL_PATH, PAGODA_SHARED.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startServer } from './server_process.mjs';

const tdir = path.join(process.env.PAGODA_SHARED, 'templates');
const conversations = Object.fromEntries(
  JSON.parse(fs.readFileSync(path.join(tdir, 'conversations.json'), 'utf8')).conversations.map((c) => [c.id, c]));
const goldens = fs.readFileSync(path.join(tdir, 'renderings.jsonl'), 'utf8').split('\n').filter(Boolean)
  .map((l) => JSON.parse(l));
const golden = (template, conversation, agp) =>
  goldens.find((g) => g.template === template && g.conversation === conversation && g.add_generation_prompt === agp);

// Qwen3's template: tools, tool calls, reasoning history and the enable_thinking switch; it never reads bos_token.
const server = await startServer(['--chat-template-file', path.join(tdir, 'templates', 'qwen3.jinja')]);
after(() => server.proc.kill('SIGTERM'));

async function post(route, body) {
  const r = await fetch(server.url + route, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, json: await r.json() };
}

test('the server says which template it uses', () => {
  assert.match(server.log(), /chat template jinja \(.*qwen3\.jinja\) \(from --chat-template-file\)/);
});

test('/apply-template equals jinja2 for every conversation, with and without the generation prompt', async () => {
  let compared = 0;
  for (const [id, conv] of Object.entries(conversations)) {
    for (const agp of [false, true]) {
      const g = golden('qwen3', id, agp);
      const body = { messages: conv.messages, add_generation_prompt: agp };
      if (conv.tools) body.tools = conv.tools;
      if (conv.template_kwargs) body.chat_template_kwargs = conv.template_kwargs;
      const r = await post('/apply-template', body);
      if (g.ok) {
        assert.equal(r.status, 200, `${id}: ${JSON.stringify(r.json)}`);
        assert.equal(r.json.prompt, g.output, `${id} agp=${agp}`);
      } else {
        assert.equal(r.status, 400, `${id}: jinja2 raised ${g.error}`);
        assert.equal(r.json.error.param, 'messages');
      }
      compared++;
    }
  }
  assert.equal(compared, 32);
});

test('chat_template_kwargs reach the template', async () => {
  const messages = conversations.thinking_disabled.messages;
  const on = await post('/apply-template', { messages });
  const off = await post('/apply-template', { messages, chat_template_kwargs: { enable_thinking: false } });
  assert.equal(on.status, 200);
  assert.equal(off.json.prompt, on.json.prompt + '<think>\n\n</think>\n\n');
});

test('a chat request prompts the model with the rendered template', async () => {
  const messages = conversations.multi_turn.messages;
  const rendered = (await post('/apply-template', { messages })).json.prompt;
  const chat = await post('/v1/chat/completions', { messages, max_tokens: 12, temperature: 0 });
  const completion = await post('/v1/completions', { prompt: rendered, max_tokens: 12, temperature: 0 });
  assert.equal(chat.status, 200, JSON.stringify(chat.json));
  assert.equal(chat.json.usage.prompt_tokens, completion.json.usage.prompt_tokens);
  assert.equal(chat.json.choices[0].message.content, completion.json.choices[0].text);
});

test('OpenAI wire format is adapted: string arguments become an object, no content becomes ""', async () => {
  // OpenAI clients send arguments as a string and content null or absent: the conversation renders as if sent
  // with an object and "" (with which Qwen3's template works; with null or no content jinja2 fails).
  const asObject = conversations.tool_call_content_empty;
  const asString = conversations.tool_call_string_arguments;
  const rendered = (await post('/apply-template', { messages: asObject.messages })).json.prompt;
  const chat = await post('/v1/chat/completions', { messages: asString.messages, max_tokens: 8, temperature: 0 });
  const completion = await post('/v1/completions', { prompt: rendered, max_tokens: 8, temperature: 0 });
  assert.equal(chat.status, 200, JSON.stringify(chat.json));
  assert.equal(chat.json.usage.prompt_tokens, completion.json.usage.prompt_tokens);
  // /apply-template renders the messages as given, as jinja2 does: without content, Qwen3's template fails.
  const verbatim = await post('/apply-template', { messages: asString.messages });
  assert.equal(verbatim.status, 400);
  assert.equal(golden('qwen3', 'tool_call_string_arguments', true).ok, false);
});

test('bad requests are 400 naming the field', async () => {
  const user = [{ role: 'user', content: 'hi' }];
  const cases = [
    ['/apply-template', { messages: 'hi' }, 'messages'],
    ['/apply-template', { messages: [{ content: 'x' }] }, 'messages'],
    ['/apply-template', { messages: user, add_generation_prompt: 'yes' }, 'add_generation_prompt'],
    ['/apply-template', { messages: user, chat_template_kwargs: [1] }, 'chat_template_kwargs'],
    ['/apply-template', { messages: user, chat_template_kwargs: { messages: [] } }, 'chat_template_kwargs'],
    ['/apply-template', { messages: user, tools: 'none' }, 'tools'],
    ['/apply-template', { messages: user, prompt: 'x' }, 'prompt'],
    ['/apply-template', { tools: [] }, 'messages'],
    ['/v1/chat/completions', { messages: user, chat_template_kwargs: 'x' }, 'chat_template_kwargs'],
    ['/v1/chat/completions', { messages: user, chat_template_kwargs: { add_generation_prompt: false } },
      'chat_template_kwargs'],
    ['/v1/chat/completions', { messages: [{ role: 'user', content: 'x', weight: 1 }] }, 'messages'],
    // Verbatim, Qwen3's template cannot render text parts (jinja2 fails the same way).
    ['/apply-template', { messages: conversations.content_parts.messages }, 'messages'],
    ['/v1/chat/completions', { messages: user, tool_choice: 'auto' }, 'tool_choice'],  // no tools to choose from
  ];
  for (const [route, body, param] of cases) {
    const r = await post(route, body);
    assert.equal(r.status, 400, `${route} ${JSON.stringify(body)}: ${JSON.stringify(r.json)}`);
    assert.equal(r.json.error.param, param, JSON.stringify(r.json));
    assert.ok(r.json.error.message.length > 0);
  }
  const raw = await fetch(server.url + '/apply-template', { method: 'POST', body: '{"messages": [' });
  assert.equal(raw.status, 400);
});

test('text parts are joined for a template that does not read parts itself', async () => {
  const parts = conversations.content_parts.messages;
  const joined = parts.map((m) => ({ role: m.role,
    content: typeof m.content === 'string' ? m.content : m.content.map((p) => p.text).join('') }));
  const a = await post('/v1/chat/completions', { messages: parts, max_tokens: 6, temperature: 0 });
  const b = await post('/v1/chat/completions', { messages: joined, max_tokens: 6, temperature: 0 });
  assert.equal(a.status, 200, JSON.stringify(a.json));
  assert.equal(a.json.usage.prompt_tokens, b.json.usage.prompt_tokens);
  assert.equal(a.json.choices[0].message.content, b.json.choices[0].message.content);
});
