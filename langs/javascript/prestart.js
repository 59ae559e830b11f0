// llm-sandbox pre-started interpreter for JavaScript one-shot runs: started
// in a fresh sandbox before any request, it waits, then runs the program
// once as `node main.js` would, and the sandbox is destroyed after it.
// Run as: node -e "<this file's contents>"
//
// Protocol: once started, it writes ESC "]sbx;ready;000" BEL to stdout and
// to stderr. Then a line on stdin, the program's file name relative to the
// workspace, says the program is in place; the rest of stdin is the
// program's. End of input before the line: exit 0 (the pool closed it
// unused); a bad line: exit 2.
(() => {
  const fs = require("fs");
  const path = require("path");
  const Module = require("module");
  // the streams console uses, made before the go rather than after it (the
  // first console.log would make them: a few milliseconds)
  void process.stdout;
  void process.stderr;
  for (const fd of [1, 2]) fs.writeSync(fd, "\x1b]sbx;ready;000\x07");
  // a byte at a time: the program gets the rest of fd 0 intact
  const one = Buffer.alloc(1);
  const line = [];
  for (;;) {
    let n;
    try {
      n = fs.readSync(0, one, 0, 1, null);
    } catch (e) {
      if (e.code === "EAGAIN") {
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
        continue;
      }
      n = 0;
    }
    if (n !== 1) process.exit(line.length ? 2 : 0);
    if (one[0] === 10) break;
    line.push(one[0]);
    if (line.length > 4096) process.exit(2);
  }
  // as for `node main.js`: argv[1] is the program's absolute path, and
  // the module loader runs it as the main module (CommonJS or ES module)
  process.argv[1] = path.resolve(Buffer.from(line).toString());
  process.execArgv = []; // not "-e <driver>": child_process.fork() reuses it
  Module.runMain(process.argv[1]);
})();
