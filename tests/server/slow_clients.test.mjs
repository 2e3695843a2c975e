// Slow and silent clients cannot starve the others (docs/server.md, "Slow clients"). The server gets more slow
// connections than it has worker threads (528 with the default flags: max_num_seqs 256 + max_queue 256 + 16):
// heads sent a byte at a time, bodies that never finish, connections that send nothing, and streams whose
// responses are never read. While they are all open, /health answers and a normal completion completes promptly;
// heads and bodies that miss their deadlines get 408; the server survives.
// Env: PAGODA_BINARY, PAGODA_MODEL_PATH (server_process.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startServer } from './server_process.mjs';

const PER_KIND = 180;   // x 3 kinds, plus the unread streams: 590 connections, more than 528 threads
const UNREAD_STREAMS = 50;

function connect(url) {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(u.port), u.hostname, () => resolve(sock));
    sock.on('error', reject);
  });
}

// Collects what the server sends on a socket (for the 408s), ignoring errors once we are done with it.
function watch(sock) {
  const got = { data: '', closed: false };
  sock.on('data', (d) => { got.data += d.toString('latin1'); });
  sock.on('close', () => { got.closed = true; });
  sock.on('error', () => {});
  return got;
}

async function timed(fn) {
  const t0 = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - t0 };
}

test('more slow connections than threads starve nobody', { timeout: 120000 }, async () => {
  const server = await startServer(['--request-head-timeout', '4', '--request-body-timeout', '4']);
  const sockets = [];
  try {
    const trickles = [], bodies = [], idles = [];
    for (let i = 0; i < PER_KIND; ++i) {
      const a = await connect(server.url);
      trickles.push(watch(a));
      a.write('POST /v1/completions HTTP/1.1\r\nHost: x\r\n');
      const b = await connect(server.url);
      bodies.push(watch(b));
      b.write('POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"prompt":');
      const c = await connect(server.url);
      idles.push(watch(c));
      sockets.push(a, b, c);
    }
    // Streams never read: the request goes out whole, then the socket is paused for good.
    const body = JSON.stringify({ prompt: 'Once upon a time', max_tokens: 64, stream: true, ignore_eos: true });
    for (let i = 0; i < UNREAD_STREAMS; ++i) {
      const s = await connect(server.url);
      s.on('error', () => {});
      s.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      s.pause();
      sockets.push(s);
    }
    // A byte a second on every trickling head.
    const ticker = setInterval(() => { for (const s of sockets.slice(0, 3 * PER_KIND).filter((_, i) => i % 3 === 0)) s.write('X'); }, 1000);
    try {
      const health = await timed(() => fetch(`${server.url}/health`).then((r) => r.status));
      assert.equal(health.value, 200);
      assert.ok(health.ms < 2000, `/health took ${health.ms} ms`);
      const completion = await timed(() => fetch(`${server.url}/v1/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: 8, temperature: 0 }),
      }).then(async (r) => ({ status: r.status, body: await r.json() })));
      assert.equal(completion.value.status, 200, JSON.stringify(completion.value.body));
      assert.equal(completion.value.body.choices[0].finish_reason, 'length');
      assert.ok(completion.ms < 5000, `the completion took ${completion.ms} ms`);
      const metrics = await (await fetch(`${server.url}/metrics`)).text();
      const waiting = Number(/pagoda:http_connections_waiting\{[^}]*\} (\d+)/.exec(metrics)[1]);
      assert.ok(waiting >= 3 * PER_KIND - 10, `connections waiting in the front: ${waiting}`);
      // The deadlines (4 s) pass: every trickling head and every unfinished body gets 408 and is closed.
      await new Promise((r) => setTimeout(r, 6000));
    } finally {
      clearInterval(ticker);
    }
    const got408 = (list) => list.filter((g) => g.data.startsWith('HTTP/1.1 408')).length;
    assert.equal(got408(trickles), PER_KIND, 'every slow head got 408');
    assert.equal(got408(bodies), PER_KIND, 'every unfinished body got 408');
    assert.ok(trickles.every((g) => g.data.includes('"message":"the request head did not arrive within 4000 ms"')));
    assert.equal(idles.filter((g) => g.closed).length, 0, 'idle connections wait (60 s) without a thread');
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    const timedOut = Number(/pagoda:http_connections_timed_out_total\{[^}]*\} (\d+)/.exec(metrics)[1]);
    assert.ok(timedOut >= 2 * PER_KIND, `timed out: ${timedOut}`);
    // Still serving.
    assert.equal((await fetch(`${server.url}/health`)).status, 200);
  } finally {
    for (const s of sockets) s.destroy();
    server.proc.kill('SIGTERM');
    await server.exited;
  }
});

test('more waiting connections than --max-connections: the longest waiting is closed, new clients get in',
  { timeout: 60000 }, async () => {
    const server = await startServer(['--max-connections', '64']);
    const sockets = [];
    try {
      const idles = [];
      for (let i = 0; i < 100; ++i) {
        const s = await connect(server.url);
        idles.push(watch(s));
        sockets.push(s);
      }
      const health = await timed(() => fetch(`${server.url}/health`).then((r) => r.status));
      assert.equal(health.value, 200);
      await new Promise((r) => setTimeout(r, 300));
      const closed = idles.map((g) => g.closed);
      // The earliest ones were closed to make room, the latest 63 or so are still open.
      assert.ok(closed.slice(0, 30).every(Boolean), 'the oldest were evicted');
      assert.ok(closed.slice(-40).every((c) => !c), 'the newest stay');
      const metrics = await (await fetch(`${server.url}/metrics`)).text();
      assert.ok(Number(/pagoda:http_connections_evicted_total\{[^}]*\} (\d+)/.exec(metrics)[1]) >= 36);
    } finally {
      for (const s of sockets) s.destroy();
      server.proc.kill('SIGTERM');
      await server.exited;
    }
  });
