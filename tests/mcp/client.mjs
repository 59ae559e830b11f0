// SPDX-License-Identifier: MIT
//
// client.mjs: llm-sandbox's MCP server driven by the official TypeScript
// SDK client (@modelcontextprotocol/sdk), over stdio (the SDK spawns the
// server) and over Streamable HTTP (`llm-sandbox serve --http`, skipped
// with the binary's own words while the build has no HTTP transport).
// Concurrency, progress, cancellation, responsiveness during a slow run,
// refused arguments, and ending the server while a run is in flight.
//
//   tests/mcp/setup.sh                       # installs Node 22 and the SDK
//   tests/mcp/node_modules/node/bin/node --test tests/mcp/client.mjs
//
// SBX_BIN names the llm-sandbox binary (ctest sets it). Every sandboxed
// process is watched from outside through /proc: as root a sandbox runs
// as a host uid of its own (LLM_SANDBOX_UID_RANGE), otherwise it is known by
// its process names; either way it is a descendant of the server.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import net from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const BIN = process.env.SBX_BIN || join(HERE, '..', '..', 'build', 'bin', 'llm-sandbox');
const ROOT = process.geteuid() === 0;
const SANDBOX_UID = Number(process.env.LLM_SANDBOX_UID || 1879048192);
// As root each sandbox runs as a host uid of its own from LLM_SANDBOX_UID_RANGE
// (default 1879113728:65536); probes and older plugins as SANDBOX_UID.
const isSandboxUid = (uid) =>
  uid === SANDBOX_UID || (uid >= 1879113728 && uid < 1879113728 + 65536);
const SANDBOX_COMMS = new Set(['bwrap', 'agent', 'sbx-agent', 'python3', 'pasta', 'pasta.avx2']);
const NO_HTTP = '--http is not available in this build';
const TOOLS = ['execute_code', 'get_supported_languages', 'get_language_details', 'list_backends'];

// A minimal environment, so the caller's BACKEND, SANDBOX_* or
// LLM_SANDBOX_CONFIG cannot change what is tested.
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

// ---- processes, seen from /proc -------------------------------------------

function procStat(pid) {
  try {
    const st = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const uid = Number(/^Uid:\s+(\d+)/m.exec(status)[1]);
    const comm = st.slice(st.indexOf('(') + 1, st.lastIndexOf(')'));
    const rest = st.slice(st.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(rest[1]), state: rest[0], comm, start: rest[19], uid };
  } catch {
    return null;
  }
}

function descendants(rootPid) {
  const table = new Map();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    const s = procStat(Number(e));
    if (s) table.set(Number(e), s);
  }
  const children = new Map();
  for (const [pid, s] of table) {
    if (!children.has(s.ppid)) children.set(s.ppid, []);
    children.get(s.ppid).push(pid);
  }
  const out = new Map();
  const todo = [rootPid];
  while (todo.length) {
    for (const c of children.get(todo.pop()) || []) {
      if (!out.has(c)) {
        out.set(c, table.get(c));
        todo.push(c);
      }
    }
  }
  return out;
}

const isSandboxed = (s) => (ROOT ? isSandboxUid(s.uid) : SANDBOX_COMMS.has(s.comm));

// Remembers every sandboxed descendant of the server it ever saw (by pid
// and start time), so one reparented after its parent died is still ours.
class ProcWatch {
  constructor(rootPid) {
    this.rootPid = rootPid;
    this.seen = new Map();
    this.poll();
    this.timer = setInterval(() => this.poll(), 20);
    this.timer.unref(); // a failed test must not keep node alive
  }
  poll() {
    for (const [pid, s] of descendants(this.rootPid)) {
      if (isSandboxed(s)) this.seen.set(pid, s);
    }
  }
  stop() {
    clearInterval(this.timer);
  }
  saw(comm) {
    return [...this.seen.values()].some((s) => s.comm === comm);
  }
  // The seen processes still running (a zombie has ended: it only waits
  // to be reaped by whoever inherited it).
  alive() {
    const out = [];
    for (const [pid, s] of this.seen) {
      const now = procStat(pid);
      if (now && now.start === s.start && now.state !== 'Z' && now.state !== 'X') {
        out.push(`${pid} ${now.comm} (${now.state})`);
      }
    }
    return out;
  }
  async waitFor(comm, ms = 20000) {
    const t0 = Date.now();
    while (!this.saw(comm)) {
      if (Date.now() - t0 > ms) throw new Error(`no sandboxed ${comm} appeared within ${ms} ms`);
      await sleep(20);
    }
  }
  // Milliseconds until nothing seen runs, or null after ms.
  async waitGone(ms) {
    const t0 = Date.now();
    for (;;) {
      if (this.alive().length === 0) return Date.now() - t0;
      if (Date.now() - t0 > ms) return null;
      await sleep(10);
    }
  }
}

// ---- servers ----------------------------------------------------------------

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

function canConnect(port) {
  return new Promise((resolve) => {
    const sock = net.connect({ port, host: '127.0.0.1' });
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

// `llm-sandbox serve --http 127.0.0.1:PORT`: { proc, url, stderr() }, or
// { unavailable: reason } when the binary says it has no HTTP transport.
async function startHttp() {
  const port = await freePort();
  const proc = spawn(BIN, ['serve', '--http', `127.0.0.1:${port}`], {
    env: cleanEnv(),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
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

// Probe once whether this build has --http.
const httpProbe = existsSync(BIN) ? await startHttp() : { unavailable: `no binary at ${BIN}` };
if (httpProbe.proc) {
  httpProbe.proc.kill('SIGTERM');
  await httpProbe.exited;
}
const HTTP_SKIP = httpProbe.unavailable || false;
if (HTTP_SKIP) console.log(`# HTTP tests skipped: ${HTTP_SKIP}`);

// One connected client with its server. kind: 'stdio' | 'http'.
async function connect(kind) {
  const client = new Client({ name: 'llm-sandbox-client-test', version: '1.0.0' });
  const errors = [];
  client.onerror = (e) => errors.push(e);
  let transport, pid, server, stderr;
  if (kind === 'stdio') {
    transport = new StdioClientTransport({ command: BIN, args: [], env: cleanEnv(), stderr: 'pipe' });
    let err = '';
    transport.stderr.on('data', (d) => (err += d));
    stderr = () => err;
    await client.connect(transport);
    pid = transport.pid;
    // the child process, to read its exit status (the SDK keeps it private)
    const proc = transport._process;
    server = {
      exited: new Promise((resolve) => {
        if (proc.exitCode !== null) resolve({ code: proc.exitCode, sig: proc.signalCode });
        proc.once('exit', (code, sig) => resolve({ code, sig }));
      }),
    };
  } else {
    server = await startHttp();
    if (server.unavailable) throw new Error(server.unavailable);
    transport = new StreamableHTTPClientTransport(new URL(server.url));
    stderr = server.stderr;
    await client.connect(transport);
    pid = server.proc.pid;
  }
  assert.equal(client.getServerVersion().name, 'llm-sandbox');
  // tools/list first: the SDK then validates every structuredContent
  // against the tool's outputSchema
  const { tools } = await client.listTools();
  return {
    kind, client, transport, pid, server, errors, stderr, tools,
    // End the session; the server's exit status.
    async close() {
      if (kind === 'stdio') {
        await client.close(); // ends the server's stdin
        return server.exited;
      }
      await client.close();
      server.proc.kill('SIGTERM');
      return server.exited;
    },
  };
}

const run = (c, args, opts = {}) =>
  c.client.callTool({ name: 'execute_code', arguments: args }, CallToolResultSchema, {
    timeout: 120000,
    ...opts,
  });

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
  assert.equal(result.isError, result.structuredContent.status !== 'ok');
  return result.structuredContent;
}

// Each test gets a fresh server, and checks it ends cleanly.
function withServer(kind, fn, { closeChecks = true } = {}) {
  return async (t) => {
    const c = await connect(kind);
    const watch = new ProcWatch(c.pid);
    try {
      await fn(c, watch, t);
    } finally {
      watch.stop();
      const exit = await c.close();
      if (closeChecks) {
        // HTTP ends on SIGTERM: 128 + 15 (mcp/serve.h)
        assert.deepEqual(exit, { code: kind === 'stdio' ? 0 : 143, sig: null },
          `server ended badly; stderr:\n${c.stderr()}`);
        const gone = await watch.waitGone(5000);
        assert.notEqual(gone, null, `left running after the server ended: ${watch.alive()}`);
      }
    }
  };
}

// ---- the tests, once per transport ------------------------------------------

for (const kind of ['stdio', 'http']) {
  describe(kind, { skip: kind === 'http' && HTTP_SKIP }, () => {
    test('lists the reference tools with schemas', withServer(kind, async (c) => {
      const names = c.tools.map((t) => t.name);
      for (const name of TOOLS) assert.ok(names.includes(name), `${name} missing from ${names}`);
      for (const t of c.tools) assert.equal(t.inputSchema.type, 'object', t.name);
      const exec = c.tools.find((t) => t.name === 'execute_code');
      assert.ok(exec.outputSchema, 'execute_code has an outputSchema');
      assert.deepEqual(exec.inputSchema.required, ['code']);
      const r = await run(c, { code: 'print(6*7)' });
      assert.equal(sc(r).stdout, '42\n');
      assert.equal(sc(r).status, 'ok');
      assert.deepEqual(c.errors, []);
    }));

    test('(a) ten concurrent calls return their own, unmixed output', withServer(kind, async (c) => {
      const N = 10, LINES = 3000;
      const nonce = Math.random().toString(36).slice(2, 8);
      const code = (i) =>
        `import sys, time\nfor j in range(${LINES}):\n` +
        `    sys.stdout.write("M${i}-${nonce} %d\\n" % j)\n` +
        `    if j % 500 == 0: sys.stdout.flush(); time.sleep(0.02)\n` +
        `sys.stderr.write("E${i}\\n")\n`;
      const t0 = Date.now();
      const results = await Promise.all(
        Array.from({ length: N }, (_, i) => run(c, { code: code(i), timeout: 60 })));
      const wall = Date.now() - t0;
      let sum = 0;
      results.forEach((r, i) => {
        const s = sc(r);
        assert.equal(s.status, 'ok', JSON.stringify(s).slice(0, 300));
        const want = Array.from({ length: LINES }, (_, j) => `M${i}-${nonce} ${j}\n`).join('');
        assert.equal(s.stdout.length, want.length, `call ${i}: stdout length`);
        assert.ok(s.stdout === want, `call ${i}: stdout differs from its own marker lines`);
        assert.equal(s.stderr, `E${i}\n`);
        assert.equal(s.stdout_truncated, false);
        sum += s.duration_ms;
      });
      console.log(`# ${kind}: ${N} calls in ${wall} ms wall, ${sum} ms of runs added up`);
      assert.deepEqual(c.errors, []);
    }));

    test('sessions: state, files and artifacts through the SDK', withServer(kind, async (c) => {
      const tool = (name, args) =>
        c.client.callTool({ name, arguments: args }, CallToolResultSchema, { timeout: 120000 });
      const created = await tool('create_session', { language: 'python' });
      const id = sc(created).session_id;
      assert.match(id, /^s-[0-9a-f]{32}$/);
      assert.equal(sc(await run(c, { session_id: id, code: 'x = 41' })).status, 'ok');
      assert.equal(sc(await run(c, { session_id: id, code: 'print(x + 1)' })).stdout, '42\n');
      // A library the host does not have, into the live session (from its
      // dependency set); the variable stays. Then a notebook cell: its bare
      // last expression is shown.
      const lib = await run(c, {
        session_id: id, libraries: ['pyfiglet'],
        code: 'import pyfiglet\nprint(pyfiglet.__file__.startswith("/tmp/.sbx/libs/"), x)',
      });
      assert.equal(sc(lib).status, 'ok', JSON.stringify(sc(lib)).slice(0, 600));
      assert.equal(sc(lib).stdout, 'True 41\n');
      assert.equal(sc(await run(c, { session_id: id, code: 'y = x + 1\ny' })).stdout, '42\n');
      const up = await tool('upload_file', { session_id: id, path: 'in.csv', content: 'a,b\n1,2\n' });
      assert.equal(up.isError, false, JSON.stringify(up));
      const r = await run(c, {
        session_id: id,
        code: "import csv\nrows = list(csv.reader(open('in.csv')))\n" +
          "open('out.txt', 'w').write(str(len(rows)))",
      });
      const s = sc(r);
      assert.deepEqual(s.artifacts.map((a) => a.path), ['out.txt']);
      const link = r.content.find((b) => b.type === 'resource_link');
      assert.equal(link.uri, `sandbox://sessions/${id}/files/out.txt`);
      const read = await c.client.readResource({ uri: link.uri });
      assert.equal(read.contents[0].text, '2');
      const down = await tool('download_file', { session_id: id, path: 'out.txt' });
      assert.deepEqual(down.structuredContent,
        { path: 'out.txt', size: 1, encoding: 'utf-8', content: '2' });
      const bad = await tool('download_file', { session_id: id, path: '../../etc/passwd' });
      assert.equal(bad.isError, true);
      const listed = await tool('list_sessions', {});
      assert.deepEqual(listed.structuredContent.sessions.map((x) => x.session_id), [id]);
      assert.equal((await tool('close_session', { session_id: id })).isError, false);
      const after = await run(c, { session_id: id, code: 'print(x)' });
      assert.equal(sc(after).status, 'refused');
      assert.deepEqual(c.errors, []);
    }));

    test('(b) progress: phases, then live output', withServer(kind, async (c) => {
      const seen = [];
      const t0 = Date.now();
      const code = 'import time\nfor i in range(15):\n    print("tick", i, flush=True)\n' +
        '    time.sleep(0.1)\n';
      const r = await run(c, { code, timeout: 30 }, {
        onprogress: (p) => seen.push({ ...p, at: Date.now() - t0 }),
      });
      const end = Date.now() - t0;
      assert.equal(sc(r).status, 'ok');
      assert.equal(sc(r).stdout.split('\n').length, 16);
      const trace = JSON.stringify(seen);
      assert.ok(seen.length >= 4, `few progress notifications: ${trace}`);
      for (let i = 1; i < seen.length; i++) {
        assert.ok(seen[i].progress > seen[i - 1].progress, `progress not increasing: ${trace}`);
      }
      const msgs = seen.map((p) => p.message || '');
      const prep = msgs.indexOf('preparing'), running = msgs.indexOf('running');
      assert.ok(prep >= 0 && running > prep, `phases preparing, running: ${trace}`);
      const output = seen.filter((p) => /tick \d+/.test(p.message || ''));
      assert.ok(output.length >= 2, `output in progress messages: ${trace}`);
      assert.ok(output.every((p) => seen.indexOf(p) > running), trace);
      // live: output arrived while the program still ran, not all at the end
      assert.ok(output[0].at < end - 500, `first output at ${output[0].at} ms, result at ${end} ms`);
      // each message holds the latest output: the newest tick never goes back
      const newest = output.map((p) => Math.max(...[...p.message.matchAll(/tick (\d+)/g)]
        .map((m) => Number(m[1]))));
      for (let i = 1; i < newest.length; i++) {
        assert.ok(newest[i] >= newest[i - 1], `older output after newer: ${trace}`);
      }
      assert.ok(newest[newest.length - 1] > newest[0], `output did not advance: ${trace}`);
      assert.deepEqual(c.errors, []);
    }));

    test('(c) cancellation kills the run within a second', withServer(kind, async (c, watch) => {
      const ac = new AbortController();
      const call = run(c, { code: 'while True: pass', timeout: 120 }, { signal: ac.signal });
      const settled = call.then(() => 'resolved', (e) => e);
      await watch.waitFor('python3');
      if (ROOT) {
        assert.ok([...watch.seen.values()].every((s) => isSandboxUid(s.uid)));
      }
      const t0 = Date.now();
      ac.abort('test cancels');
      const outcome = await settled;
      assert.notEqual(outcome, 'resolved', 'an aborted call must reject');
      const gone = await watch.waitGone(5000);
      assert.notEqual(gone, null, `still running 5 s after the cancel: ${watch.alive()}`);
      console.log(`# ${kind}: sandbox gone ${Date.now() - t0} ms after the cancel`);
      // the server is fine afterwards
      await c.client.ping();
      const r = await run(c, { code: 'print("after")' });
      assert.equal(sc(r).stdout, 'after\n');
    }));

    test('(d) a slow run blocks neither ping nor tools/list', withServer(kind, async (c, watch) => {
      const slow = run(c, { code: 'import time\ntime.sleep(6)\nprint("slept")', timeout: 30 });
      // answered while the slow call still runs: an order, not a time (a
      // time bound failed on a loaded machine)
      let slowDone = false;
      slow.then(() => (slowDone = true), () => {});
      await watch.waitFor('python3');
      for (let i = 0; i < 3; i++) {
        const t0 = Date.now();
        await c.client.ping();
        const { tools } = await c.client.listTools();
        assert.equal(tools.length, c.tools.length);
        assert.ok(!slowDone, `ping and tools/list waited for the slow call (${Date.now() - t0} ms)`);
      }
      // and another call finishes while the slow one still runs
      const quick = await run(c, { code: 'print("quick")' });
      assert.equal(sc(quick).stdout, 'quick\n');
      assert.equal(slowDone, false, 'the quick call waited for the slow one');
      assert.equal(sc(await slow).stdout, 'slept\n');
      assert.deepEqual(c.errors, []);
    }));

    test('(e) invalid arguments are refused results; an unknown tool is an error',
      withServer(kind, async (c) => {
        const cases = [
          [{ code: 'print(1)', language: 'cobol' }, /cobol/],
          [{ code: 'print(1)', timeout: -1 }, /timeout/],
          [{ code: 'print(1)', timeout: 301 }, /ceiling|300/],
          [{ code: 'print(1)', libraries: ['; rm -rf /'] }, /rm -rf|librar|requirement/],
          [{ code: '#'.repeat((1 << 20) + 1) }, /limit|large|bytes/],
          [{ code: 'print(1)', bogus: 1 }, /bogus/],
          [{ code: 42 }, /code/],
          [{}, /code/],
        ];
        for (const [args, why] of cases) {
          const r = await run(c, args);
          const s = sc(r);
          const shown = JSON.stringify(args).slice(0, 80);
          assert.equal(r.isError, true, shown);
          assert.equal(s.status, 'refused', `${shown}: ${JSON.stringify(s).slice(0, 300)}`);
          assert.ok(typeof s.message === 'string' && why.test(s.message),
            `${shown}: message ${JSON.stringify(s.message)}`);
          assert.equal(s.exit_code, null);
          assert.equal(s.stdout, '');
        }
        await assert.rejects(
          c.client.callTool({ name: 'no_such_tool', arguments: {} }),
          (e) => e instanceof McpError && e.code === -32602,
        );
        // still serving
        assert.equal(sc(await run(c, { code: 'print(2)' })).stdout, '2\n');
        assert.deepEqual(c.errors, []);
      }));

    test('(f) ending the server kills a running call', async () => {
      const c = await connect(kind);
      const watch = new ProcWatch(c.pid);
      const call = run(c, { code: 'while True: pass', timeout: 120 }).then((r) => r, (e) => e);
      await watch.waitFor('python3');
      const t0 = Date.now();
      let exit;
      if (kind === 'stdio') {
        // end of input: the SDK closes the server's stdin (and would send
        // SIGTERM only after 2 s)
        exit = await c.close();
      } else {
        // the HTTP server has no stdin: a signal ends it (mcp/serve.h);
        // give it 5 s before giving up on it
        c.server.proc.kill('SIGTERM');
        exit = await Promise.race([c.server.exited, sleep(5000).then(() => null)]);
        if (!exit) {
          const left = watch.alive();
          watch.stop();
          c.server.proc.kill('SIGKILL');
          await c.server.exited;
          assert.fail(`serve --http still running 5 s after SIGTERM; sandbox: ${left}`);
        }
      }
      const took = Date.now() - t0;
      watch.stop();
      assert.deepEqual(exit, { code: kind === 'stdio' ? 0 : 143, sig: null },
        `server ended badly: ${c.stderr()}`);
      // The call would run for 120 s: ending far sooner proves the server
      // killed it rather than waited. (A tighter bound failed on a loaded
      // machine: 3.2 s with the load average at 15.)
      assert.ok(took < 15000, `the server took ${took} ms to end`);
      const gone = await watch.waitGone(5000);
      assert.notEqual(gone, null, `left running: ${watch.alive()}`);
      console.log(`# ${kind}: server ended ${took} ms after its input did`);
      const answer = await call;
      if (kind === 'stdio') {
        assert.ok(answer instanceof Error, 'end of input: the client is gone, nothing is answered');
      } else {
        // a signal: the call in flight is answered (cancelled) before the
        // server exits, so the client is not left waiting
        assert.equal(answer.isError, true, JSON.stringify(answer).slice(0, 300));
        assert.equal(answer.structuredContent.status, 'cancelled', JSON.stringify(answer).slice(0, 300));
      }
      if (kind === 'http') await c.client.close().catch(() => {});
    });

    test('(g) SIGTERM answers the call in flight before the server exits', async () => {
      const c = await connect(kind);
      const watch = new ProcWatch(c.pid);
      const call = run(c, { code: 'while True: pass', timeout: 120 }).then((r) => r, (e) => e);
      await watch.waitFor('python3');
      process.kill(c.pid, 'SIGTERM');
      const answer = await Promise.race([call, sleep(10000).then(() => 'no answer')]);
      watch.stop();
      assert.notEqual(answer, 'no answer', `no answer 10 s after SIGTERM: ${c.stderr()}`);
      assert.ok(!(answer instanceof Error), `the call failed instead: ${answer}`);
      assert.equal(answer.isError, true);
      assert.equal(answer.structuredContent.status, 'cancelled', JSON.stringify(answer).slice(0, 300));
      const exit = await Promise.race([c.server.exited, sleep(10000).then(() => null)]);
      assert.deepEqual(exit, { code: 143, sig: null }, `server ended badly: ${c.stderr()}`);
      assert.notEqual(await watch.waitGone(5000), null, `left running: ${watch.alive()}`);
      await c.client.close().catch(() => {});
    });
  });
}

after(() => {
  // nothing of ours may outlive the tests (servers are children of node)
  const left = [...descendants(process.pid).values()].filter(isSandboxed);
  assert.deepEqual(left, [], `sandboxed processes left: ${JSON.stringify(left)}`);
});
