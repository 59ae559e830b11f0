// llm-sandbox session driver for JavaScript: a warm node process that runs
// one code cell per request and keeps the global scope between cells.
// Run as: node -e "<this file's contents>" (no __filename, no siblings).
//
// Protocol: requests on stdin are "<code_len> <stdin_len>\n" + code bytes +
// stdin bytes (counts are bytes). After each cell the driver writes the end
// marker ESC "]sbx;" NONCE ";" NNN BEL to stdout, then to stderr; NNN is the
// cell's status (000 ok, 001 uncaught error, or the process.exit status).
// EOF between requests: exit 0. Bad nonce or header: message on stderr, exit 2.
//
// Limitations: the driver owns process.stdin, so a cell's stdin data is
// dropped and user code must not read process.stdin. Cells are classic
// scripts: no top-level await (return a promise instead: it is awaited), and
// a second `let x`/`const x` for the same name is a SyntaxError.
//
// Like Node's REPL, a cell shows its completion value (the last expression
// statement's: `x`, `x = 5`, `arr.map(f)`) with util.inspect on stdout,
// unless it is undefined (declarations, console.log(...)); a promise is
// awaited and its value shown the same way.
(() => {
  'use strict';
  const vm = require('vm'), util = require('util'), path = require('path');
  const Module = require('module');
  const realExit = process.exit.bind(process);
  const die = (msg) => { process.stderr.write(`session.js: ${msg}\n`); realExit(2); };

  const nonce = process.env.SBX_SESSION_NONCE || '';
  delete process.env.SBX_SESSION_NONCE;  // unsets it for child processes too
  if (!/^[0-9a-f]{32}$/.test(nonce)) die('SBX_SESSION_NONCE is missing or malformed');

  // What a script in the workspace would have: require() resolves './x.js'
  // and node_modules from the working directory.
  const cwd = process.cwd(), file = path.join(cwd, 'main.js');
  const mod = new Module(file, null);
  mod.filename = file;
  mod.paths = Module._nodeModulePaths(cwd);
  Object.assign(globalThis, { require: Module.createRequire(cwd + '/'), module: mod,
    exports: mod.exports, __filename: file, __dirname: cwd });

  // process.exit() in a cell ends the cell, not the interpreter: it throws a
  // private sentinel. It stays overridden after the cell, so a late timer
  // that calls it is reported as an uncaught exit and ignored.
  class Exit { constructor(code) { this.code = code; } }
  process.exit = (code) => {
    throw new Exit(code === undefined ? process.exitCode || 0 : code);
  };
  const statusOf = (e) => (e instanceof Exit ? (Number(e.code) | 0) & 255 : 1);
  const report = (e) => {
    if (e instanceof Exit) return;
    let s = e instanceof Error ? util.inspect(e) : `Uncaught ${util.inspect(e)}`;
    // Hide this driver's frames: everything from the first vm frame on.
    const lines = s.split('\n'), cut = lines.findIndex((l) => /^\s+at .*node:vm:/.test(l));
    if (cut >= 0) s = lines.slice(0, cut).join('\n');
    process.stderr.write(s + '\n');
  };

  // Errors that escape a cell asynchronously (a timer callback, a promise
  // nobody awaits) fail the running cell; between cells they are only printed.
  let current = null;  // {status} of the running cell
  const asyncFailure = (e) => {
    report(e);
    if (current) current.status = statusOf(e);
  };
  process.on('uncaughtException', asyncFailure);
  process.on('unhandledRejection', asyncFailure);

  // import() in cells loads modules as from the workspace (Node 20.?+; on
  // older Node import() in a cell fails). Its "experimental" warning is muted.
  const loader = vm.constants && vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER;
  const emitWarning = process.emitWarning;
  process.emitWarning = function (w, ...rest) {
    if (/USE_MAIN_CONTEXT_DEFAULT_LOADER/.test(String(w && w.message || w))) return;
    return emitWarning.call(this, w, ...rest);
  };
  // ES modules ignore NODE_PATH, so import() would not find a session's
  // libraries that require() finds. A resolve hook (module.register: Node
  // 20.6+, 18.19+; older Node goes without) retries a bare name that the
  // workspace does not have from the given node_modules folders: those of
  // NODE_PATH at start (a session's sets), then, newest first, each set
  // copied into the live session (the manifest's session.libraries calls
  // the function below). Hooks run in a thread of their own: they get the
  // folders as data.
  const esmHook = 'data:text/javascript,' + encodeURIComponent(`
    let dirs = [];
    export function initialize(d) { dirs = d; }
    export async function resolve(spec, ctx, next) {
      try {
        return await next(spec, ctx);
      } catch (e) {
        if (e?.code !== 'ERR_MODULE_NOT_FOUND' || /^([./]|[a-zA-Z][a-zA-Z0-9+.-]*:)/.test(spec))
          throw e;
        for (const d of dirs) {
          try {
            return await next(spec, { ...ctx, parentURL: 'file://' + d + '/' });
          } catch (e2) {
            if (e2?.code !== 'ERR_MODULE_NOT_FOUND') throw e2;
          }
        }
        throw e;
      }
    }`);
  const esmPaths = (dirs) => {
    dirs = dirs.filter((d) => d.startsWith('/'));
    if (dirs.length && typeof Module.register === 'function') Module.register(esmHook, { data: dirs });
  };
  esmPaths((process.env.NODE_PATH || '').split(':'));
  Object.defineProperty(globalThis, Symbol.for('llm-sandbox.esmPaths'), { value: esmPaths });
  const tick = (f) => new Promise((resolve) => f(resolve));
  let n = 0;
  async function runCell(code) {
    const cell = current = { status: 0 };
    try {
      // runInThisContext: var, functions and top-level let/const persist.
      let v = vm.runInThisContext(code, { filename: `cell ${++n}`,
        importModuleDynamically: loader });
      if (v !== null && (typeof v === 'object' || typeof v === 'function') &&
          typeof v.then === 'function') v = await v;
      if (v !== undefined) process.stdout.write(util.inspect(v) + '\n');
    } catch (e) {
      report(e);
      cell.status = statusOf(e);
    }
    // Give callbacks the cell queued (setTimeout 0, setImmediate) their turn;
    // longer timers may fire during a later cell.
    await tick((r) => setTimeout(r, 0));
    await tick(setImmediate);
    current = null;
    // Writes to pipes and files are synchronous, so the cell's output is out.
    const marker = `\x1b]sbx;${nonce};${String(cell.status).padStart(3, '0')}\x07`;
    process.stdout.write(marker);
    process.stderr.write(marker);
  }

  // Framing: a header line, then code_len + stdin_len bytes.
  let buf = Buffer.alloc(0), busy = false, ended = false;
  async function pump() {
    if (busy) return;
    busy = true;
    for (;;) {
      const nl = buf.indexOf(10);
      if (nl < 0) {
        if (buf.length > 64) die('malformed request header');
        break;
      }
      const m = /^(\d+) (\d+)$/.exec(buf.toString('latin1', 0, nl));
      if (!m) die(`malformed request header ${JSON.stringify(buf.toString('latin1', 0, nl))}`);
      const codeLen = Number(m[1]), total = nl + 1 + codeLen + Number(m[2]);
      if (buf.length < total) break;
      const code = buf.toString('utf8', nl + 1, nl + 1 + codeLen);
      buf = buf.subarray(total);  // the cell's stdin data is dropped
      await runCell(code);
    }
    busy = false;
    if (ended) {
      if (buf.length) die('end of input inside a request');
      realExit(0);
    }
  }
  process.stdin.on('data', (chunk) => { buf = Buffer.concat([buf, chunk]); pump(); });
  process.stdin.on('end', () => { ended = true; pump(); });
})();
