// Verified anchors end to end: the operator's flow with the real CLI (keygen, root, sign, revoke) against a real
// `pagoda serve`: admin-key protection, registration and its refusals, activation, requests naming the anchor
// through the official OpenAI client (usage.anchor_tokens; bitwise the same tokens as the plain prompt), tenant
// scope, revocation ending a running stream with finish_reason "anchor_revoked", no signature verification while
// requests decode, and a restart that keeps every refusal.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { startServer } from './server_process.mjs';
import { sseEvents, scrape } from './sse.mjs';

const bin = process.env.PAGODA_BINARY;
const modelPath = process.env.PAGODA_MODEL_PATH;
const model = 'stories260K';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pagoda-anchors-'));
const f = (name) => path.join(dir, name);
const cli = (...args) => execFileSync(bin, ['anchor', ...args], { encoding: 'utf8' }).trim();

for (const k of ['root', 'signer', 'revoker']) cli('keygen', '-o', f(k));
cli('root', '--role', `root=${f('root.pub')}`, '--role', `anchor=${f('signer.pub')}`, '--role',
  `revocation=${f('revoker.pub')}`, '--version', '1', '--expires', '+30d', '-o', f('root.json'));
const text = 'Lily is a little girl who loves her dog Max.';
function sign(name, { lineage = 'lily', version = 1, scope = '*', body = text, key = 'signer' } = {}) {
  return cli('sign', '--key', f(`${key}.key`), '--model', modelPath, '--lineage', lineage, '--version', String(version),
    '--kind', 'persona', '--scope', scope, '--text', body, '--expires', '+7d', '-o', f(name)).split('\n').pop();
}
const digest = sign('anchor.json');
const keys = f('keys');
fs.writeFileSync(keys, 'acme key-a\nglobex key-b\n');
const serverArgs = ['--anchor-trust-root', f('root.json'), '--anchor-state-dir', f('state'), '--admin-api-key', 'adm',
  '--api-keys-file', keys];

function admin(url, method, p, body, key = 'adm') {
  return fetch(`${url}${p}`, { method, headers: { Authorization: `Bearer ${key}` }, body: method === 'POST' ? body ?? '' : undefined });
}

test('the operator flow: register, activate, serve, revoke, restart', async () => {
  let s = await startServer(serverArgs);
  try {
    // Only the admin key reaches the anchor endpoints.
    assert.equal((await admin(s.url, 'GET', '/v1/anchors', undefined, 'key-a')).status, 403);
    assert.equal((await admin(s.url, 'GET', '/v1/anchors', undefined, 'wrong')).status, 401);
    // Registration, and a refusal that changes nothing.
    let r = await admin(s.url, 'POST', '/v1/anchors', fs.readFileSync(f('anchor.json')));
    assert.equal(r.status, 201);
    const reg = await r.json();
    assert.equal(reg.digest, digest);
    assert.equal(reg.state, 'verified');
    const tampered = JSON.parse(fs.readFileSync(f('anchor.json'), 'utf8'));
    tampered.payloadType = 'application/json';
    r = await admin(s.url, 'POST', '/v1/anchors', JSON.stringify(tampered));
    assert.equal(r.status, 400);
    assert.equal((await r.json()).error.code, 'wrong_payload_type');
    sign('by_revoker.json', { version: 2, key: 'revoker' });
    r = await admin(s.url, 'POST', '/v1/anchors', fs.readFileSync(f('by_revoker.json')));
    assert.equal((await r.json()).error.code, 'wrong_role');

    // A verified anchor is not usable until activated; an unknown one looks the same.
    const c = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'key-a', maxRetries: 0 });
    for (const d of [digest, 'f'.repeat(64)])
      await assert.rejects(c.completions.create({ model, prompt: ' One day', max_tokens: 2, anchor: d }),
        (e) => e.status === 400 && e.code === 'anchor_not_found');
    r = await admin(s.url, 'POST', `/v1/anchors/${digest}/activate`);
    assert.equal(r.status, 200);
    const act = await r.json();
    assert.equal(act.state, 'active');
    assert.ok(act.tokens > 0 && act.blocks > 0);

    // A request with the anchor = the same tokens sent as one plain prompt (token ids), token for token.
    const anchorIds = JSON.parse(execFileSync(bin, ['tokenize', modelPath, '-p', text, '--no-special', '--format', 'json'],
      { encoding: 'utf8' }).trim().split('\n').pop()).ids;
    const promptIds = [410, 385, 328];  // " One day" without BOS
    const withAnchor = await c.completions.create({ model, prompt: promptIds, max_tokens: 16, temperature: 0,
      anchor: digest, logprobs: 1, return_tokens_as_token_ids: true });
    const plain = await c.completions.create({ model, prompt: [1, ...anchorIds, ...promptIds], max_tokens: 16,
      temperature: 0, logprobs: 1, return_tokens_as_token_ids: true });
    assert.deepEqual(withAnchor.choices[0].logprobs.tokens, plain.choices[0].logprobs.tokens);
    assert.equal(withAnchor.usage.anchor_tokens, act.tokens);
    assert.equal(withAnchor.usage.prompt_tokens, act.tokens + promptIds.length);
    const chat = await c.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4,
      anchor: digest });
    assert.equal(chat.usage.anchor_tokens, act.tokens);

    // Revocation while a stream decodes: the stream ends with anchor_revoked and [DONE]; no signature was
    // verified while it decoded.
    const res = await fetch(`${s.url}/v1/completions`, { method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: 'Bearer key-a' },
      body: JSON.stringify({ model, prompt: ' One day', max_tokens: 1800, ignore_eos: true, stream: true, anchor: digest }) });
    const events = sseEvents(res.body);
    for (let i = 0; i < 5; ++i) await events.next();
    const before = (await scrape(s.url))['pagoda:anchor_signature_verifications_total'];
    for (let i = 0; i < 20; ++i) await events.next();
    assert.equal((await scrape(s.url))['pagoda:anchor_signature_verifications_total'], before,
      'signatures were verified while requests decoded');
    cli('revoke', '--key', f('revoker.key'), '--version', '1', '--digest', digest, '--expires', '+1d', '-o', f('rev.json'));
    r = await admin(s.url, 'POST', '/v1/anchors/revocations', fs.readFileSync(f('rev.json')));
    assert.equal(r.status, 200);
    assert.deepEqual((await r.json()).revoked, [digest]);
    let finish = null, done = false;
    for await (const ev of events) {
      if (ev === '[DONE]') done = true;
      else for (const ch of ev.choices) finish = ch.finish_reason ?? finish;
    }
    assert.ok(done);
    assert.equal(finish, 'anchor_revoked');
    await assert.rejects(c.completions.create({ model, prompt: 'x', max_tokens: 1, anchor: digest }),
      (e) => e.code === 'anchor_not_found');
    r = await admin(s.url, 'POST', '/v1/anchors', fs.readFileSync(f('anchor.json')));
    assert.equal((await r.json()).error.code, 'revoked');
    const m = await scrape(s.url);
    assert.equal(m['pagoda:anchor_pinned_blocks'], 0);
  } finally {
    s.proc.kill('SIGTERM');
    await s.exited;
  }
  // The CLI makes the same registry checks on the stopped server's state folder, read-only.
  const before = fs.readFileSync(f('state/state.json'));
  assert.throws(() => execFileSync(bin, ['anchor', 'verify', '--trust-root', f('root.json'), '--model', modelPath,
    '--state-dir', f('state'), f('anchor.json')], { stdio: 'pipe' }), (e) => /pagoda: error: revoked:/.test(e.stderr.toString()));
  assert.deepEqual(fs.readFileSync(f('state/state.json')), before);
  // A restart over the same state refuses what it refused before.
  s = await startServer(serverArgs);
  try {
    const r = await admin(s.url, 'POST', '/v1/anchors', fs.readFileSync(f('anchor.json')));
    assert.equal((await r.json()).error.code, 'revoked');
    const list = await (await admin(s.url, 'GET', '/v1/anchors')).json();
    assert.equal(list.data.find((a) => a.digest === digest).state, 'revoked');
  } finally {
    s.proc.kill('SIGTERM');
    await s.exited;
  }
});

test('an anchor scoped to one tenant is invisible to another; --anchor activates at start', async () => {
  const scoped = sign('scoped.json', { lineage: 'acme-policy', scope: 'acme', body: 'Be kind.' });
  const s = await startServer([...serverArgs.filter((a, i) => a !== '--anchor-state-dir' && serverArgs[i - 1] !== '--anchor-state-dir'),
    '--anchor', f('scoped.json')]);
  try {
    const a = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'key-a', maxRetries: 0 });
    const b = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'key-b', maxRetries: 0 });
    const ok = await a.completions.create({ model, prompt: ' Then', max_tokens: 2, anchor: scoped });
    assert.ok(ok.usage.anchor_tokens > 0);
    await assert.rejects(b.completions.create({ model, prompt: ' Then', max_tokens: 2, anchor: scoped }),
      (e) => e.status === 400 && e.code === 'anchor_not_found');
  } finally {
    s.proc.kill('SIGTERM');
    await s.exited;
  }
});

test('an active anchor passing its expiry is revoked in the engine and refused from then on', async () => {
  const d = cli('sign', '--key', f('signer.key'), '--model', modelPath, '--lineage', 'short-lived', '--version', '1',
    '--kind', 'memory', '--scope', '*', '--text', 'Max is brown.', '--expires', '+15s', '-o', f('short.json')).split('\n').pop();
  const s = await startServer(['--anchor-trust-root', f('root.json'), '--anchor', f('short.json')]);
  try {
    const c = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const ok = await c.completions.create({ model, prompt: ' One day', max_tokens: 2, anchor: d });
    assert.ok(ok.usage.anchor_tokens > 0);
    let refused = null;
    for (let i = 0; i < 300 && !refused; ++i) {
      try {
        await c.completions.create({ model, prompt: ' One day', max_tokens: 2, anchor: d });
        await new Promise((r) => setTimeout(r, 100));
      } catch (e) {
        refused = e;
      }
    }
    assert.ok(refused, 'the anchor was still served long after its expiry');
    assert.equal(refused.code, 'anchor_not_found');
    const m = await scrape(s.url);
    assert.equal(m['pagoda:anchor_revocations_total'], 1, 'the expiry reached the engine');
  } finally {
    s.proc.kill('SIGTERM');
    await s.exited;
  }
});

test('without --admin-api-key the anchor endpoints do not exist', async () => {
  const s = await startServer(['--anchor-trust-root', f('root.json')]);
  try {
    assert.equal((await admin(s.url, 'GET', '/v1/anchors')).status, 404);
    assert.equal((await admin(s.url, 'POST', '/v1/anchors', '{}')).status, 404);
  } finally {
    s.proc.kill('SIGTERM');
    await s.exited;
  }
});

test.after(() => fs.rmSync(dir, { recursive: true, force: true }));
