// SPDX-License-Identifier: MIT
//
// client2026.mjs: llm-sandbox's MCP server driven by the official v2
// client (@modelcontextprotocol/client 2.3.1) on protocol revision
// 2026-07-28, over stdio (the client spawns the server, after probing a
// sibling with server/discover) and over Streamable HTTP (`llm-sandbox
// serve --http`). No initialize, no session: every request carries its
// version in _meta, every result says resultType, and the client refuses
// any result that lacks what the revision requires (cache fields on lists
// and reads, for one). Also: the 2025 handshake still works with the same
// client, and cancelling a call kills its sandbox (stdio: the client sends
// notifications/cancelled; HTTP: it closes the request's connection).
//
//   tests/mcp/setup.sh
//   SBX_BIN=build/bin/llm-sandbox tests/mcp/node_modules/node/bin/node --test tests/mcp/client2026.mjs
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

import { Client, ProtocolError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const HERE = dirname(fileURLToPath(import.meta.url));
const BIN = process.env.SBX_BIN || join(HERE, '..', '..', 'build', 'bin', 'llm-sandbox');
const MODERN = '2026-07-28';
const NO_HTTP = '--http is not available in this build';
const TOOLS = ['execute_code', 'get_supported_languages', 'get_language_details', 'list_backends'];
const ROOT = process.geteuid() === 0;
const SANDBOX_UID = Number(process.env.LLM_SANDBOX_UID || 1879048192);
// As root each sandbox runs as a host uid of its own from LLM_SANDBOX_UID_RANGE
// (default 1879113728:65536); probes and older plugins as SANDBOX_UID.
const isSandboxUid = (uid) =>
  uid === SANDBOX_UID || (uid >= 1879113728 && uid < 1879113728 + 65536);
const SANDBOX_COMMS = new Set(['bwrap', 'agent', 'sbx-agent', 'python3', 'pasta', 'pasta.avx2']);

function cleanEnv() {
  // LLM_SANDBOX_POOL=0: no ready sandboxes, as the tests count a server's
  // sandboxed processes (tests/integration/test_pool.py tests the pool)
  const env = {
    PATH: '/usr/bin:/bin', HOME: process.env.HOME || '/tmp', LANG: 'C.UTF-8', LLM_SANDBOX_POOL: '0',
  };
  for (const k of ['ASAN_OPTIONS', 'UBSAN_OPTIONS', 'LSAN_OPTIONS', 'TMPDIR']) {
    if (process.env[k] !== undefined) env[k] = process.env[k];
  }
  return env;
}

// ---- sandboxed processes, seen from /proc (as in client.mjs) ---------------

function procStat(pid) {
  try {
    const st = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
    const rest = st.slice(st.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(rest[1]), state: rest[0], comm: st.slice(st.indexOf('(') + 1,
      st.lastIndexOf(')')), start: rest[19], uid };
  } catch {
    return null;
  }
}

function sandboxedUnder(rootPid) {
  const table = new Map();
  for (const e of readdirSync('/proc')) {
    const s = /^\d+$/.test(e) && procStat(Number(e));
    if (s) table.set(Number(e), s);
  }
  const out = new Map();
  const todo = [rootPid];
  while (todo.length) {
    const parent = todo.pop();
    for (const [pid, s] of table) {
      if (s.ppid === parent && !out.has(pid)) {
        out.set(pid, s);
        todo.push(pid);
      }
    }
  }
  return [...out].filter(([, s]) => (ROOT ? isSandboxUid(s.uid) : SANDBOX_COMMS.has(s.comm)));
}

// Every sandboxed descendant of a pid ever seen, by pid and start time.
class ProcWatch {
  constructor(rootPid) {
    this.rootPid = rootPid;
    this.seen = new Map();
    this.timer = setInterval(() => this.poll(), 20);
    this.timer.unref();
  }
  poll() {
    for (const [pid, s] of sandboxedUnder(this.rootPid)) this.seen.set(pid, s);
  }
  stop() {
    clearInterval(this.timer);
  }
  alive() {
    return [...this.seen].filter(([pid, s]) => {
      const now = procStat(pid);
      return now && now.start === s.start && now.state !== 'Z' && now.state !== 'X';
    }).map(([pid, s]) => `${pid} ${s.comm}`);
  }
  async waitFor(comm, ms = 20000) {
    const t0 = Date.now();
    while (![...this.seen.values()].some((s) => s.comm === comm)) {
      if (Date.now() - t0 > ms) throw new Error(`no sandboxed ${comm} within ${ms} ms`);
      await sleep(20);
    }
  }
  async waitGone(ms) {
    const t0 = Date.now();
    while (this.alive().length) {
      if (Date.now() - t0 > ms) return null;
      await sleep(10);
    }
    return Date.now() - t0;
  }
}

// ---- servers and clients ------------------------------------------------------

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

const canConnect = (port) => new Promise((resolve) => {
  const sock = net.connect({ port, host: '127.0.0.1' });
  sock.once('connect', () => (sock.destroy(), resolve(true)));
  sock.once('error', () => resolve(false));
});

// `llm-sandbox serve --http 127.0.0.1:PORT`, or { unavailable } when the
// build has no HTTP transport.
async function startHttp() {
  const port = await freePort();
  const proc = spawn(BIN, ['serve', '--http', `127.0.0.1:${port}`],
    { env: cleanEnv(), stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr.on('data', (d) => (err += d));
  const exited = new Promise((resolve) => proc.once('exit', (code, sig) => resolve({ code, sig })));
  const t0 = Date.now();
  for (;;) {
    const done = await Promise.race([exited, sleep(50).then(() => null)]);
    if (done) {
      if (err.includes(NO_HTTP)) return { unavailable: `llm-sandbox says: ${err.trim()}` };
      throw new Error(`serve --http exited (${JSON.stringify(done)}): ${err}`);
    }
    if (await canConnect(port)) break;
    if (Date.now() - t0 > 10000) {
      proc.kill('SIGKILL');
      throw new Error(`serve --http did not listen within 10 s: ${err}`);
    }
  }
  return { proc, exited, url: `http://127.0.0.1:${port}/mcp`, stderr: () => err };
}

const httpProbe = existsSync(BIN) ? await startHttp() : { unavailable: `no binary at ${BIN}` };
if (httpProbe.proc) {
  httpProbe.proc.kill('SIGTERM');
  await httpProbe.exited;
}
const HTTP_SKIP = httpProbe.unavailable || false;
if (HTTP_SKIP) console.log(`# HTTP tests skipped: ${HTTP_SKIP}`);

// A connected client. mode: the client's versionNegotiation mode. Records
// what went over the wire: every message the server sent (wire.received),
// and for HTTP every POST's headers, status and body (wire.posts).
async function connect(kind, mode = { pin: MODERN }) {
  const client = new Client({ name: 'llm-sandbox-client2026-test', version: '1.0.0' },
    { versionNegotiation: { mode } });
  const errors = [];
  client.onerror = (e) => errors.push(e);
  const wire = { received: [], posts: [] };
  let transport, pid, exited, stderr, stop, end;
  if (kind === 'stdio') {
    transport = new StdioClientTransport({ command: BIN, args: [], env: cleanEnv(), stderr: 'pipe' });
    let err = '';
    transport.stderr.on('data', (d) => (err += d));
    stderr = () => err;
    await client.connect(transport);
    pid = transport.pid;
    const proc = transport._process; // to read the exit status (private in the SDK)
    exited = new Promise((resolve) => {
      if (proc.exitCode !== null) resolve({ code: proc.exitCode, sig: proc.signalCode });
      proc.once('exit', (code, sig) => resolve({ code, sig }));
    });
    stop = () => client.close();
    end = stop; // end of input
  } else {
    const server = await startHttp();
    if (server.unavailable) throw new Error(server.unavailable);
    const spy = async (url, init) => {
      const res = await fetch(url, init);
      const post = { headers: new Headers(init.headers), body: init.body, status: res.status };
      wire.posts.push(post);
      return res;
    };
    transport = new StreamableHTTPClientTransport(new URL(server.url), { fetch: spy });
    stderr = server.stderr;
    await client.connect(transport);
    pid = server.proc.pid;
    exited = server.exited;
    stop = async () => {
      await client.close();
      server.proc.kill('SIGTERM');
    };
    end = () => server.proc.kill('SIGTERM'); // the client stays connected
  }
  const onmessage = transport.onmessage;
  transport.onmessage = (msg, extra) => {
    wire.received.push(msg);
    onmessage(msg, extra);
  };
  return {
    kind, client, transport, pid, errors, wire, stderr,
    async close() {
      await stop();
      return exited;
    },
    // Tell the server to end, as its operator would; its exit status.
    async end() {
      await end();
      return exited;
    },
  };
}

// Each test gets a fresh server, which must end cleanly, leaving nothing.
function withServer(kind, fn, mode) {
  return async () => {
    const c = await connect(kind, mode);
    const watch = new ProcWatch(c.pid);
    try {
      await fn(c, watch);
    } finally {
      watch.stop();
      const exit = await c.close();
      // HTTP ends on SIGTERM: 128 + 15 (mcp/serve.h)
      assert.deepEqual(exit, { code: kind === 'stdio' ? 0 : 143, sig: null },
        `server ended badly; stderr:\n${c.stderr()}`);
      assert.notEqual(await watch.waitGone(5000), null, `left running: ${watch.alive()}`);
    }
  };
}

const run = (c, args, opts = {}) =>
  c.client.callTool({ name: 'execute_code', arguments: args }, { timeout: 120000, ...opts });

// A finished tool call's structured result, checked against its text: a
// run's is its readable form (a status line, then stdout and stderr as
// printed), any other result's the JSON of structuredContent.
function sc(result) {
  assert.ok(result.structuredContent, JSON.stringify(result).slice(0, 500));
  const s = result.structuredContent;
  const text = result.content[0].text;
  if (typeof s.stdout === 'string' && typeof s.status === 'string') {
    assert.ok(text.startsWith(`status: ${s.status}`), text.slice(0, 500));
    if (s.stdout) assert.ok(text.includes(`--- stdout ---\n${s.stdout}`), text.slice(0, 500));
    if (s.stderr) assert.ok(text.includes(`--- stderr ---\n${s.stderr}`), text.slice(0, 500));
  } else {
    assert.deepEqual(JSON.parse(text), s);
  }
  return result.structuredContent;
}

// ---- the tests, once per transport ------------------------------------------

for (const kind of ['stdio', 'http']) {
  describe(kind, { skip: kind === 'http' && HTTP_SKIP }, () => {
    test('negotiates 2026-07-28 with server/discover, no initialize', withServer(kind, async (c) => {
      assert.equal(c.client.getNegotiatedProtocolVersion(), MODERN);
      assert.equal(c.client.getProtocolEra(), 'modern');
      assert.equal(c.client.getServerVersion()?.name, 'llm-sandbox');
      const d = c.client.getDiscoverResult();
      assert.ok(d.supportedVersions.includes(MODERN), JSON.stringify(d));
      assert.ok(d.supportedVersions.includes('2025-11-25'), JSON.stringify(d));
      assert.ok(d.capabilities.tools && d.capabilities.resources, JSON.stringify(d));
      assert.match(d.instructions, /sandbox/);
      // an explicit discover answers the same, and names the server in _meta
      const again = await c.client.discover();
      assert.deepEqual(again.supportedVersions, d.supportedVersions);
      assert.equal(again._meta['io.modelcontextprotocol/serverInfo'].name, 'llm-sandbox');
      assert.deepEqual(c.errors, []);
    }));

    test('lists tools, runs print(6*7), reads sandbox://languages', withServer(kind, async (c) => {
      const { tools } = await c.client.listTools();
      const names = tools.map((t) => t.name);
      for (const name of TOOLS) assert.ok(names.includes(name), `${name} missing from ${names}`);
      const exec = tools.find((t) => t.name === 'execute_code');
      assert.equal(exec.inputSchema.type, 'object');
      assert.ok(exec.outputSchema, 'execute_code has an outputSchema');

      const r = await run(c, { code: 'print(6*7)' });
      const s = sc(r);
      assert.equal(s.stdout, '42\n');
      assert.equal(s.status, 'ok');
      assert.equal(r.isError, false);

      const res = await c.client.readResource({ uri: 'sandbox://languages' });
      assert.equal(res.contents.length, 1);
      assert.equal(res.contents[0].uri, 'sandbox://languages');
      const langs = JSON.parse(res.contents[0].text);
      assert.ok(JSON.stringify(langs).includes('python'), res.contents[0].text.slice(0, 300));

      // on the wire: each result of the revision's shape
      const results = c.wire.received.filter((m) => m.result);
      assert.ok(results.length >= 3, JSON.stringify(c.wire.received).slice(0, 300));
      for (const m of results) {
        assert.equal(m.result.resultType, 'complete', JSON.stringify(m).slice(0, 300));
        assert.equal(m.result._meta['io.modelcontextprotocol/serverInfo'].name, 'llm-sandbox');
      }
      for (const m of results.filter((m) => m.result.tools || m.result.contents)) {
        assert.equal(m.result.ttlMs, 0);
        assert.equal(m.result.cacheScope, 'private');
      }
      assert.deepEqual(c.errors, []);
    }));

    if (kind === 'http') {
      test('HTTP: no session; every POST names its version and method', withServer(kind, async (c) => {
        await c.client.listTools();
        await run(c, { code: 'print(1)' });
        await c.client.readResource({ uri: 'sandbox://languages' });
        assert.ok(c.wire.posts.length >= 4, `${c.wire.posts.length} POSTs`);
        for (const p of c.wire.posts) {
          const body = JSON.parse(p.body);
          const what = `${body.method}: ${p.status}`;
          assert.equal(p.status, 200, what);
          assert.equal(p.headers.get('mcp-session-id'), null, what);
          assert.equal(p.headers.get('mcp-protocol-version'), MODERN, what);
          assert.equal(p.headers.get('mcp-method'), body.method, what);
          assert.equal(body.params._meta['io.modelcontextprotocol/protocolVersion'], MODERN, what);
        }
        const read = c.wire.posts.find((p) => JSON.parse(p.body).method === 'resources/read');
        assert.equal(read.headers.get('mcp-name'), 'sandbox://languages');
      }));
    }

    test('a missing resource is -32602 with its uri', withServer(kind, async (c) => {
      await assert.rejects(c.client.readResource({ uri: 'sandbox://nothing' }), (e) => {
        assert.ok(e instanceof ProtocolError, String(e));
        assert.equal(e.code, -32602);
        assert.equal(e.data.uri, 'sandbox://nothing');
        return true;
      });
      await assert.rejects(c.client.callTool({ name: 'no_such_tool', arguments: {} }),
        (e) => e instanceof ProtocolError && e.code === -32602);
      assert.equal(sc(await run(c, { code: 'print(2)' })).stdout, '2\n');
    }));

    test('progress notifications reach the caller', withServer(kind, async (c) => {
      const seen = [];
      const code = 'import time\nfor i in range(8):\n    print("tick", i, flush=True)\n' +
        '    time.sleep(0.1)\n';
      const r = await run(c, { code, timeout: 30 }, { onprogress: (p) => seen.push(p) });
      assert.equal(sc(r).status, 'ok');
      const msgs = seen.map((p) => p.message || '');
      assert.ok(msgs.includes('running'), JSON.stringify(seen));
      assert.ok(msgs.some((m) => /tick \d/.test(m)), JSON.stringify(seen));
    }));

    test('cancelling a call kills its sandbox within a second', withServer(kind, async (c, watch) => {
      const ac = new AbortController();
      const call = run(c, { code: 'while True: pass', timeout: 120 }, { signal: ac.signal })
        .then(() => 'resolved', (e) => e);
      await watch.waitFor('python3');
      const t0 = Date.now();
      ac.abort('test cancels');
      assert.notEqual(await call, 'resolved', 'an aborted call must reject');
      assert.notEqual(await watch.waitGone(5000), null,
        `still running 5 s after the cancel: ${watch.alive()}`);
      console.log(`# ${kind} ${MODERN}: sandbox gone ${Date.now() - t0} ms after the cancel`);
      assert.equal(sc(await run(c, { code: 'print("after")' })).stdout, 'after\n');
    }));

    test('ending the server kills a running call', async () => {
      const c = await connect(kind);
      const watch = new ProcWatch(c.pid);
      const call = run(c, { code: 'while True: pass', timeout: 120 }).then((r) => r, (e) => e);
      await watch.waitFor('python3');
      const t0 = Date.now();
      // stdio: end of input; HTTP: SIGTERM while the call's connection is open
      const exit = await Promise.race([c.end(), sleep(5000).then(() => null)]);
      watch.stop();
      if (!exit) {
        process.kill(c.pid, 'SIGKILL');
        assert.fail(`the server still ran 5 s after being told to end: ${watch.alive()}`);
      }
      assert.deepEqual(exit, { code: kind === 'stdio' ? 0 : 143, sig: null },
        `server ended badly: ${c.stderr()}`);
      // the call would run for minutes: ending far sooner proves the server
      // killed it (a 2 s bound failed on a loaded machine)
      assert.ok(Date.now() - t0 < 15000, `the server took ${Date.now() - t0} ms to end`);
      assert.notEqual(await watch.waitGone(5000), null, `left running: ${watch.alive()}`);
      const answer = await call;
      if (kind === 'stdio') {
        assert.ok(answer instanceof Error, 'end of input: nothing is answered');
      } else { // a signal: the call in flight is answered, cancelled, before the exit
        assert.equal(answer.structuredContent?.status, 'cancelled', JSON.stringify(answer).slice(0, 300));
      }
      await c.client.close().catch(() => {});
    });

    test('the same client without negotiation still gets 2025-11-25', withServer(kind, async (c) => {
      assert.equal(c.client.getNegotiatedProtocolVersion(), '2025-11-25');
      assert.equal(c.client.getProtocolEra(), 'legacy');
      assert.equal(sc(await run(c, { code: 'print(6*7)' })).stdout, '42\n');
      const results = c.wire.received.filter((m) => m.result);
      assert.ok(results.every((m) => m.result.resultType === undefined), 'no 2026 fields');
    }, 'legacy'));

    test("mode 'auto' picks 2026-07-28", withServer(kind, async (c) => {
      assert.equal(c.client.getNegotiatedProtocolVersion(), MODERN);
      assert.equal(sc(await run(c, { code: 'print(6*7)' })).stdout, '42\n');
    }, 'auto'));
  });
}

after(() => {
  const left = sandboxedUnder(process.pid);
  assert.deepEqual(left, [], `sandboxed processes left: ${JSON.stringify(left)}`);
});
