# SPDX-License-Identifier: MIT
"""Host-side tests of the session drivers (langs/*/session.*).

Each driver is started exactly as the sandbox will start it (the file's
contents passed with -c/-e, a minimal environment, a fresh working
directory) and spoken to over its stdin/stdout/stderr the way the host does:
requests "<code_len> <stdin_len>\\n" + code + stdin data; both output streams
read concurrently and split at the end marker ESC ]sbx;NONCE;NNN BEL, whose
status must agree on the two streams.

Run: python3 -m pytest -q tests/unit/test_session_drivers.py
A language whose interpreter is not installed is skipped.
"""
import json
import os
import re
import secrets
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 15.0  # seconds; only a broken driver comes near it


def _which(name, *fixed):
    for path in fixed:
        if os.access(path, os.X_OK):
            return path
    return shutil.which(name)


INTERPRETERS = {
    "python": (_which("python3", "/usr/bin/python3"), ["-u", "-c"], "langs/python/session.py"),
    "javascript": (_which("node", "/usr/bin/node"), ["-e"], "langs/javascript/session.js"),
    "ruby": (_which("ruby", "/usr/bin/ruby"), ["-e"], "langs/ruby/session.rb"),
    "r": (_which("Rscript", "/usr/bin/Rscript"), ["-e"], "langs/r/session.R"),
}

# Per-language snippets for the shared tests.
SNIPPETS = {
    "python": {
        "set": "x = 41",
        "use": "print(x + 1)",
        "append": "with open('log.txt', 'a') as f:\n    f.write('line\\n')",
        "raise": "def f():\n    raise ValueError('boom-' + str(6 * 7))\nf()",
        "exit3": "import sys\nsys.exit(3)",
        "noeol": "print('abc', end='')",
        "utf8": "print('é€😀')",
        "env": "import os, subprocess\nprint(os.environ.get('SBX_SESSION_NONCE', 'unset'))\n"
               "print(subprocess.run(['env'], capture_output=True, text=True).stdout)",
        "child": "import subprocess\nsubprocess.run(['echo', 'child']);",
        "stdin": "import sys\nprint(input(), sys.stdin.read().upper(), end='')",
    },
    "javascript": {
        "set": "let x = 41",
        "use": "console.log(x + 1)",
        "append": "require('fs').appendFileSync('log.txt', 'line\\n')",
        "raise": "function f() { throw new Error('boom-' + 6 * 7) }\nf()",
        "exit3": "process.exit(3)",
        "noeol": "void process.stdout.write('abc')",
        "utf8": "console.log('é€😀')",
        "env": "console.log(process.env.SBX_SESSION_NONCE || 'unset')\n"
               "console.log(require('child_process').execFileSync('env').toString())",
        "child": "void require('child_process').execFileSync('echo', ['child'], {stdio: 'inherit'})",
    },
    "ruby": {
        "set": "x = 41",
        "use": "puts x + 1",
        "append": "File.open('log.txt', 'a') { |f| f.puts 'line' }",
        "raise": "def f\n  raise ArgumentError, \"boom-#{6 * 7}\"\nend\nf",
        "exit3": "exit 3",
        "noeol": "print 'abc'",
        "utf8": "puts 'é€😀'",
        "env": "puts ENV.fetch('SBX_SESSION_NONCE', 'unset')\nputs `env`",
        "child": "system('echo', 'child');",
        "stdin": "print gets.chomp, ' ', $stdin.read.upcase",
    },
    "r": {
        "set": "x <- 41",
        "use": "cat(x + 1, '\\n', sep = '')",
        "append": "cat('line\\n', file = 'log.txt', append = TRUE)",
        "raise": "f <- function() stop(paste0('boom-', 6 * 7))\nf()\ncat('not reached\\n')",
        "exit3": "quit(status = 3)",
        "noeol": "cat('abc')",
        "utf8": "cat('é€😀\\n')",
        "env": "cat(Sys.getenv('SBX_SESSION_NONCE', unset = 'unset'), '\\n')\n"
               "cat(system('env', intern = TRUE), sep = '\\n')",
        "child": "invisible(system('echo child'))",
    },
}


class Result:
    def __init__(self, out, err, status):
        self.out, self.err, self.status = out, err, status
        self.stdout = out.decode("utf-8", "replace")
        self.stderr = err.decode("utf-8", "replace")

    def __repr__(self):
        return f"Result(status={self.status}, out={self.out!r}, err={self.err!r})"


class Session:
    """One driver process, spoken to as the host does."""

    def __init__(self, lang, tmp_path, nonce=None, env=None):
        interp, flags, source = INTERPRETERS[lang]
        self.nonce = secrets.token_hex(16) if nonce is None else nonce
        self.cwd = tmp_path / "work"
        home = tmp_path / "home"
        tmp = tmp_path / "tmp"
        for d in (self.cwd, home, tmp):
            d.mkdir()
        if env is None:
            env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
                   "SBX_SESSION_NONCE": self.nonce}
        # the interpreters' own temporary files (R's Rtmp directory, which a
        # killed R leaves behind) go under tmp_path, not the host's /tmp
        env = dict(env, TMPDIR=env.get("TMPDIR", str(tmp)))
        code = (ROOT / source).read_text(encoding="utf-8")
        self.proc = subprocess.Popen([interp, *flags, code], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     cwd=self.cwd, env=env)
        self.marker = re.compile(
            re.escape(b"\x1b]sbx;" + self.nonce.encode() + b";") + rb"(\d{3})\x07")
        self.cond = threading.Condition()
        self.bufs = {"out": bytearray(), "err": bytearray()}
        self.eof = {"out": False, "err": False}
        self.threads = [threading.Thread(target=self._reader, args=(name, pipe), daemon=True)
                        for name, pipe in (("out", self.proc.stdout), ("err", self.proc.stderr))]
        for t in self.threads:
            t.start()

    def _reader(self, name, pipe):
        fd = pipe.fileno()
        while True:
            chunk = os.read(fd, 65536)
            with self.cond:
                if chunk:
                    self.bufs[name] += chunk
                else:
                    self.eof[name] = True
                self.cond.notify_all()
            if not chunk:
                return

    def send(self, raw):
        self.proc.stdin.write(raw)
        self.proc.stdin.flush()

    def _take(self, name, deadline):
        """Everything before the next marker on one stream, and its status."""
        with self.cond:
            while True:
                buf = self.bufs[name]
                m = self.marker.search(buf)
                if m:
                    chunk, status = bytes(buf[:m.start()]), int(m.group(1))
                    del buf[:m.end()]
                    return chunk, status
                left = deadline - time.monotonic()
                if self.eof[name] or left <= 0:
                    raise AssertionError(
                        f"no end marker on std{name} ({'EOF' if self.eof[name] else 'timeout'});"
                        f" stdout={bytes(self.bufs['out'])!r} stderr={bytes(self.bufs['err'])!r}")
                self.cond.wait(left)

    def call(self, code, stdin=b""):
        code = code.encode("utf-8") if isinstance(code, str) else code
        stdin = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
        self.send(b"%d %d\n" % (len(code), len(stdin)) + code + stdin)
        deadline = time.monotonic() + TIMEOUT
        out, st_out = self._take("out", deadline)
        err, st_err = self._take("err", deadline)
        assert st_out == st_err, f"statuses differ: stdout {st_out}, stderr {st_err}"
        return Result(out, err, st_out)

    def close(self):
        """EOF on stdin; the driver's exit code."""
        self.proc.stdin.close()
        return self.proc.wait(TIMEOUT)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for t in self.threads:
            t.join(5)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                pipe.close()
            except OSError:
                pass


def _require(lang):
    interp = INTERPRETERS[lang][0]
    if not interp:
        pytest.skip(f"no interpreter for {lang} on this host")


@pytest.fixture(params=sorted(INTERPRETERS))
def lang(request):
    _require(request.param)
    return request.param


@pytest.fixture
def start(tmp_path):
    sessions = []

    def _start(lang, **kw):
        base = tmp_path / f"session{len(sessions)}"
        base.mkdir()
        sessions.append(Session(lang, base, **kw))
        return sessions[-1]

    yield _start
    for s in sessions:
        s.kill()


@pytest.fixture
def session(lang, start):
    return start(lang)


def _ok(r):
    assert r.status == 0, r
    return r


# ---- shared behaviour -------------------------------------------------------

def test_state_persists_between_cells(lang, session):
    snip = SNIPPETS[lang]
    r = _ok(session.call(snip["set"]))
    assert r.out == b"" and r.err == b""
    r = _ok(session.call(snip["use"]))
    assert r.out == b"42\n" and r.err == b""


def test_cells_run_once(lang, session):
    """A later cell does not replay earlier ones."""
    snip = SNIPPETS[lang]
    _ok(session.call(snip["append"]))
    _ok(session.call(snip["set"]))
    assert (session.cwd / "log.txt").read_text() == "line\n"
    _ok(session.call(snip["append"]))
    _ok(session.call(snip["use"]))
    assert (session.cwd / "log.txt").read_text() == "line\nline\n"


def test_error_then_next_cell_works(lang, session):
    snip = SNIPPETS[lang]
    _ok(session.call(snip["set"]))
    r = session.call(snip["raise"])
    assert r.status == 1, r
    assert "boom-42" in r.stderr
    assert "not reached" not in r.stdout
    # No driver frames in the report.
    for frame in ("[eval]", "node:vm", "-e:", "<string>", "run_cell", "eval(expr"):
        assert frame not in r.stderr, r.stderr
    r = _ok(session.call(snip["use"]))
    assert r.out == b"42\n"


def test_exit_ends_only_the_cell(lang, session):
    snip = SNIPPETS[lang]
    _ok(session.call(snip["set"]))
    r = session.call(snip["exit3"])
    assert r.status == 3, r
    assert session.proc.poll() is None
    assert _ok(session.call(snip["use"])).out == b"42\n"


def test_output_without_newline_is_kept(lang, session):
    r = _ok(session.call(SNIPPETS[lang]["noeol"]))
    assert r.out == b"abc"
    # The marker follows the bytes directly (nothing was added in between).
    assert r.err == b""


def test_utf8_round_trip(lang, session):
    code = SNIPPETS[lang]["utf8"]
    assert len(code.encode()) > len(code)  # the header counts bytes
    r = _ok(session.call(code))
    assert r.out == "é€😀\n".encode()
    assert _ok(session.call(SNIPPETS[lang]["noeol"])).out == b"abc"


def test_nonce_not_inherited(lang, session):
    r = _ok(session.call(SNIPPETS[lang]["env"]))
    assert "HOME=" in r.stdout  # the child's environment was printed
    assert r.stdout.startswith("unset")
    assert session.nonce not in r.stdout
    assert "SBX_SESSION_NONCE" not in r.stdout


def test_child_output_comes_before_marker(lang, session):
    r = _ok(session.call(SNIPPETS[lang]["child"]))
    assert r.out == b"child\n"


def test_eof_exits_zero(lang, session):
    _ok(session.call(SNIPPETS[lang]["set"]))
    assert session.close() == 0
    assert session.bufs["out"] == b"" and session.bufs["err"] == b""


def test_empty_cell(lang, session):
    r = _ok(session.call(""))
    assert r.out == b"" and r.err == b""


def test_many_requests_in_one_write(lang, session):
    """Requests may arrive back to back; each gets its own marker."""
    snip = SNIPPETS[lang]
    cells = [snip["set"], snip["noeol"], snip["use"]]
    raw = b"".join(b"%d 0\n" % len(c.encode()) + c.encode() for c in cells)
    session.send(raw)
    deadline = time.monotonic() + TIMEOUT
    outs = [session._take("out", deadline) for _ in cells]
    errs = [session._take("err", deadline) for _ in cells]
    assert outs == [(b"", 0), (b"abc", 0), (b"42\n", 0)]
    assert [s for _, s in errs] == [0, 0, 0]


def test_missing_nonce_exits_2(lang, start, tmp_path):
    s = start(lang, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"})
    assert s.proc.wait(TIMEOUT) == 2
    assert s.bufs["out"] == b""


def test_malformed_nonce_exits_2(lang, start):
    s = start(lang, nonce="NOT-HEX")
    assert s.proc.wait(TIMEOUT) == 2


def test_malformed_header_exits_2(lang, session):
    session.send(b"twelve bytes\n")
    assert session.proc.wait(TIMEOUT) == 2
    for t in session.threads:
        t.join(5)
    assert session.bufs["out"] == b""
    assert session.bufs["err"] != b""


# ---- per-language details ---------------------------------------------------

def _session(lang, start):
    _require(lang)
    return start(lang)


def test_python_namespace_is_clean(start):
    s = _session("python", start)
    r = _ok(s.call("print(sorted(k for k in globals() if not k.startswith('__')))"))
    assert r.out == b"[]\n"
    r = _ok(s.call("import sys\nprint(__name__, sys.argv)"))
    assert r.out == b"__main__ ['main.py']\n"


def test_python_stdin_and_fd0(start):
    s = _session("python", start)
    r = _ok(s.call(SNIPPETS["python"]["stdin"], "first\nhello\nworld\n"))
    assert r.out == b"first HELLO\nWORLD\n"
    # Children get /dev/null, not the control channel.
    r = _ok(s.call("import subprocess\nprint(repr(subprocess.run(['cat'], capture_output=True).stdout))"))
    assert r.out == b"b''\n"
    assert _ok(s.call("import sys; print(repr(sys.stdin.read()))")).out == b"''\n"


def test_python_traceback_and_fd_writes(start):
    s = _session("python", start)
    r = s.call("x = 1\n1/0")
    assert r.status == 1
    assert r.stderr.startswith("Traceback (most recent call last):\n")
    assert '<cell 1>", line 2' in r.stderr and "1/0" in r.stderr
    assert r.stderr.endswith("ZeroDivisionError: division by zero\n")
    r = _ok(s.call("import os\nos.write(1, b'raw1'); os.write(2, b'raw2');"))
    assert (r.out, r.err) == (b"raw1", b"raw2")
    r = s.call("raise SystemExit('bye')")
    assert (r.status, r.err) == (1, b"bye\n")
    assert s.call("raise SystemExit(None)").status == 0
    assert s.call("import sys; sys.exit(256 + 7)").status == 7
    r = s.call("raise KeyboardInterrupt")
    assert r.status == 130 and "KeyboardInterrupt" in r.stderr
    r = s.call("syntax error here")
    assert r.status == 1 and "SyntaxError" in r.stderr and "Traceback" not in r.stderr


def test_python_replaced_stdout_still_gets_marker(start):
    s = _session("python", start)
    r = _ok(s.call("import io, sys\nsys.stdout = io.StringIO()\nprint('hidden')"))
    assert r.out == b""
    r = _ok(s.call("buf = sys.stdout.getvalue(); sys.stdout = sys.__stdout__; print(buf, end='')"))
    assert r.out == b"hidden\n"


def test_javascript_globals_are_clean(start, tmp_path):
    _require("javascript")
    node = INTERPRETERS["javascript"][0]
    names = "JSON.stringify(Object.getOwnPropertyNames(globalThis).sort())"
    plain = subprocess.run([node, "-e", f"console.log({names})"], capture_output=True,
                           text=True, timeout=TIMEOUT, cwd=tmp_path,
                           env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    s = start("javascript")
    r = _ok(s.call(f"console.log({names})"))
    assert json.loads(r.stdout) == json.loads(plain.stdout)
    r = _ok(s.call("console.log([typeof nonce, typeof runCell, typeof buf, typeof Exit].join())"))
    assert r.out == b"undefined,undefined,undefined,undefined\n"


def test_javascript_declarations_persist_and_require(start):
    s = _session("javascript", start)
    (s.cwd / "helper.js").write_text("module.exports = (a) => a * 2;\n")
    _ok(s.call("const k = 20; var v = 1; function g() { return k + v }"))
    r = _ok(s.call("console.log(require('./helper.js')(g()), __dirname === process.cwd())"))
    assert r.out == b"42 true\n"


def test_javascript_async(start):
    s = _session("javascript", start)
    # A promise completion value is awaited; setTimeout(0) callbacks run.
    r = _ok(s.call("setTimeout(() => console.log('tick'), 0);\n"
                   "new Promise((res) => setTimeout(() => { console.log('done'); res() }, 50))"))
    assert r.out == b"tick\ndone\n"
    r = s.call("Promise.reject(new Error('nope'))")
    assert r.status == 1 and "Error: nope" in r.stderr
    r = s.call("(async () => { await null; process.exit(5) })()")
    assert r.status == 5
    r = s.call("setTimeout(() => { throw new Error('late') }, 0)")
    assert r.status == 1 and "Error: late" in r.stderr
    assert _ok(s.call("console.log('alive')")).out == b"alive\n"


def test_ruby_locals_and_stdin(start):
    s = _session("ruby", start)
    _ok(s.call("y = 1\ndef twice(v); v * 2; end"))
    r = _ok(s.call("p local_variables, twice(y + 20)"))
    assert r.out == b"[:y]\n42\n"
    r = _ok(s.call(SNIPPETS["ruby"]["stdin"], "first\nhello\n"))
    assert r.out == b"first HELLO\n"
    assert _ok(s.call("p STDIN.read, `cat`")).out == b"\"\"\n\"\"\n"


def test_ruby_namespace_and_errors(start):
    s = _session("ruby", start)
    r = _ok(s.call("p local_variables, instance_variables"))
    assert r.out == b"[]\n[]\n"
    r = s.call("raise 'plain'")
    assert r.status == 1
    assert r.err == b"cell 2:1:in `<main>': plain (RuntimeError)\n"
    r = s.call("abort 'aborted'")
    assert (r.status, r.err) == (1, b"aborted\n")
    r = s.call("foo(")
    assert r.status == 1 and "syntax error" in r.stderr


def test_r_namespace_printing_and_errors(start):
    s = _session("r", start)
    r = _ok(s.call("print(ls(all.names = TRUE))"))
    assert r.out == b"character(0)\n"
    r = _ok(s.call("x <- c(1, 2)\nx\ninvisible(3)"))
    assert r.out == b"[1] 1 2\n"
    r = s.call("stop('top')")
    assert (r.status, r.err) == (1, b"Error: top\n")
    r = _ok(s.call("sqrt(-1)"))
    assert r.out == b"[1] NaN\n"
    assert r.err == b"Warning message:\nIn sqrt(-1) : NaNs produced\n"
    assert s.call("q('no', 7)").status == 7
    r = _ok(s.call("sink('s.txt'); cat('to sink\\n')"))
    assert r.out == b""
    assert _ok(s.call("cat(readLines('s.txt'), x, '\\n')")).out == b"to sink 1 2 \n"


# ---- notebook semantics: a cell's last value is shown ------------------------

# Per language: (cell, what it prints) in order, in one session. A bare
# value at the end is shown; an assignment, a definition, a nil/None/
# undefined value and (Python, Ruby) a trailing ";" show nothing extra.
AUTOPRINT = {
    "python": [("x = 41", b""), ("x + 1", b"42\n"), ("x", b"41\n"), ("x;", b""),
               ("print('p')", b"p\n"), ("[].append(1)", b""), ("def f():\n    return 'v'\nf()  # c",
                                                               b"'v'\n"),
               ("if x:\n    y = 2\n", b""), ("_ * 2", b"'vv'\n"), ("'é' + 'x'", "'éx'\n".encode())],
    "javascript": [("let x = 41", b""), ("x + 1", b"42\n"), ("console.log('p')", b"p\n"),
                   ("function f() { return 'v' }", b""), ("f()", b"'v'\n"),
                   ("Promise.resolve([1, 2])", b"[ 1, 2 ]\n"), ("undefined", b"")],
    "ruby": [("x = 41", b""), ("x + 1", b"42\n"), ("x;", b""), ("puts 'p'", b"p\n"),
             ("def f = 'v'", b""), ("f", b"\"v\"\n"), ("require 'json'", b""),
             ("p 5", b"5\n"), ("[1, 2].map { |i| i * 2 }", b"[2, 4]\n"), ("x += 1", b"")],
    "r": [("x <- 41", b""), ("x + 1", b"[1] 42\n"), ("invisible(x)", b""), ("cat('p\\n')", b"p\n")],
}


def test_last_value_is_shown(lang, session):
    for cell, want in AUTOPRINT[lang]:
        r = _ok(session.call(cell))
        assert (cell, r.out) == (cell, want), r
        assert r.err == b"", r


def test_python_display_and_dataframes(start):
    s = _session("python", start)
    r = _ok(s.call("display(1, 'a'); display(None)\nclass C:\n    def __repr__(self):\n"
                   "        return 'C!'\n    def _repr_html_(self):\n        return '<b>C</b>'\n"
                   "C()"))
    assert r.out == b"1\n'a'\nC!\n"
    assert list(s.cwd.iterdir()) == []  # HTML only when asked for
    _ok(s.call("display(C(), include=['text/html'])"))
    assert (s.cwd / "display-001.html").read_text() == "<b>C</b>"
    r = s.call("1 +")
    assert r.status == 1 and "SyntaxError" in r.stderr and "Traceback" not in r.stderr
    r = s.call("def g():\n    raise KeyError('k')\ng()")
    assert r.status == 1 and r.stderr.startswith("Traceback") and '<cell 4>", line 3' in r.stderr
    assert "<string>" not in r.stderr
    try:
        import pandas  # noqa: F401  (the host's, as the session's)
    except ImportError:
        pytest.skip("pandas is not installed on this host")
    r = _ok(s.call("import pandas as pd\ndf = pd.DataFrame({'a': [1, 2], 'b': ['x', 'y']})\ndf"))
    assert r.out == b"   a  b\n0  1  x\n1  2  y\n"
