# SPDX-License-Identifier: MIT
"""Warm one-shot runs (core/src/sessions/pool.c) through the real MCP server on the
backend under test: a run takes a sandbox made before it was asked for,
in which, for Python and JavaScript, the interpreter already waits.

What must hold: nothing passes from one run to the next (each sandbox is
used once); a warm run behaves exactly as a cold one (same output, exit
status, stdin, errors, environment); limits still apply; a warm path that
cannot start falls back to cold runs and says why; the pool's sandboxes
end with the server, also when it is killed. Every test also passes the
harness's leftover checks (processes, cgroups, /tmp, containers).
"""
import ast
import os
import re
import shutil
import signal
import sys
import threading
import time
import uuid

import pytest

from conftest import (BACKEND, CONTAINER, MXC, SBX_BIN, clean_env, describe_pids, find_marked, new_mark, proc_status,
                      skip_unless_warm_sets)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "mcp"))
import mcptest  # noqa: E402  (tests/mcp: the JSON-RPC client)

pytestmark = pytest.mark.contract

COMM = {"python": "python3", "javascript": "node", "r": "R"}
TRIVIAL = {"python": "pass", "javascript": "0"}
LANGS = ["python", "javascript", "r"]
# no interpreter to start: their ready sandbox holds the language's warm-up
# set (/warm), and a run builds, or takes its build from the compile cache
COMPILED = ["cpp", "go"]
GO_TIMEOUT = 120


class Server:
    def __init__(self, pool="2", extra=None, mark=None):
        self.mark = mark or new_mark()
        env = {"LLM_SANDBOX_POOL": pool}
        env.update(extra or {})
        self.s = mcptest.Server(env=clean_env(env, mark_value=self.mark))
        self.s.initialize()

    def waiting(self, lang):
        """Host pids of pre-started interpreters (and any program) of
        this server's sandboxes."""
        return [p for p in find_marked(self.mark, COMM[lang]) if p != self.s.pid]

    def wait_ready(self, lang, n=1, timeout=60.0):
        deadline = time.monotonic() + timeout
        while len(self.waiting(lang)) < n:
            assert time.monotonic() < deadline, "no pre-started %s interpreter came up" % lang
            time.sleep(0.05)

    def run(self, code, language="python", **kw):
        r = self.s.call_tool("execute_code", dict(code=code, language=language, **kw),
                             timeout=120)
        assert "result" in r, r
        return r["result"]["structuredContent"]

    def warm_run(self, code, language="python", **kw):
        """A run that found a ready sandbox. A kind gets its pool from its
        first run, which is cold, and the next sandbox is made after each
        run: until one is ready, runs are cold (and are repeated here)."""
        deadline = time.monotonic() + 60
        while True:
            sc = self.run(code, language, **kw)
            if sc.get("warm") is True:
                return sc
            assert "warm" not in sc, sc
            assert time.monotonic() < deadline, "no run was warm: %r" % (sc,)
            time.sleep(0.1)

    def finish(self):
        rc = self.s.finish(30)
        assert rc == 0, self.s.stderr.decode(errors="replace")
        assert self.s.bad_lines == []


@pytest.fixture
def server():
    s = Server()
    yield s
    s.finish()


def skip_unless_image_has(lang):
    if CONTAINER and lang not in ("python", "javascript"):
        pytest.skip("the %s test image has no %s" % (BACKEND, lang))
    if lang == "r" and not CONTAINER and not shutil.which("Rscript"):
        pytest.skip("R is not installed here")


# --------------------------------------------------------------------------
# Nothing passes between runs

LEAVE = {
    "python": r"""
import builtins, os, subprocess
open('left.txt', 'w').write('x')
open('/tmp/left-tmp', 'w').write('x')
os.environ['SBX_LEFT'] = '1'
builtins.sbx_left = 1
os.chdir('/tmp')
subprocess.Popen(['sleep', '300'], start_new_session=True)
print('left')
""",
    "javascript": r"""
const fs = require('fs'), cp = require('child_process');
fs.writeFileSync('left.txt', 'x');
fs.writeFileSync('/tmp/left-tmp', 'x');
process.env.SBX_LEFT = '1';
globalThis.sbx_left = 1;
process.chdir('/tmp');
cp.spawn('sleep', ['300'], {detached: true, stdio: 'ignore'}).unref();
console.log('left');
""",
    "r": r"""
writeLines("x", "left.txt"); writeLines("x", "/tmp/left-tmp")
Sys.setenv(SBX_LEFT = "1"); sbx_left <- 1; setwd("/tmp")
system("setsid sleep 300 >/dev/null 2>&1 </dev/null &")
cat("left\n")
""",
    "cpp": r"""
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
static void put(const char *path) { std::FILE *f = std::fopen(path, "w"); std::fputs("x", f); std::fclose(f); }
int main() {
    put("left.txt"); put("/tmp/left-tmp"); put("/dev/shm/sbx-left");
    setenv("SBX_LEFT", "1", 1);
    if (chdir("/tmp") != 0) return 1;
    if (fork() == 0) { setsid(); execlp("sleep", "sleep", "300", (char *)nullptr); _exit(127); }
    std::puts("left");
}
""",
    "go": r"""package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	for _, p := range []string{"left.txt", "/tmp/left-tmp", "/dev/shm/sbx-left"} {
		os.WriteFile(p, []byte("x"), 0o644)
	}
	os.Setenv("SBX_LEFT", "1")
	os.Chdir("/tmp")
	c := exec.Command("sleep", "300")
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	c.Start()
	fmt.Println("left")
}
""",
}
LOOK = {
    "python": r"""
import builtins, os
print(os.path.exists('left.txt'), os.path.exists('/tmp/left-tmp'), 'SBX_LEFT' in os.environ,
      hasattr(builtins, 'sbx_left'), os.getcwd())
print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()) == sorted({1, os.getpid()}) or
      [open('/proc/%s/comm' % p).read().strip() for p in os.listdir('/proc') if p.isdigit()])
""",
    "javascript": r"""
const fs = require('fs');
console.log(fs.existsSync('left.txt'), fs.existsSync('/tmp/left-tmp'), 'SBX_LEFT' in process.env,
            'sbx_left' in globalThis, process.cwd());
console.log(fs.readdirSync('/proc').filter(p => /^[0-9]+$/.test(p))
            .map(p => fs.readFileSync('/proc/' + p + '/comm', 'utf8').trim())
            .filter(c => c === 'sleep').length === 0);
""",
    "r": r"""
cat(file.exists("left.txt"), file.exists("/tmp/left-tmp"), Sys.getenv("SBX_LEFT") != "",
    exists("sbx_left"), getwd(), "\n")
comm <- sapply(list.files("/proc", pattern = "^[0-9]+$", full.names = TRUE),
               function(d) tryCatch(readLines(file.path(d, "comm")), error = function(e) ""))
cat(!any(comm == "sleep"), "\n", sep = "")
""",
    # the fourth: a file in /dev/shm (compiled programs keep no globals)
    "cpp": r"""
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <string>
#include <unistd.h>
static const char *yes(bool b) { return b ? "true" : "false"; }
int main() {
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) return 1;
    std::printf("%s %s %s %s %s\n", yes(access("left.txt", F_OK) == 0),
                yes(access("/tmp/left-tmp", F_OK) == 0), yes(std::getenv("SBX_LEFT")),
                yes(access("/dev/shm/sbx-left", F_OK) == 0), cwd);
    bool none = true;
    DIR *d = opendir("/proc");
    for (struct dirent *e; (e = readdir(d));) {
        std::ifstream c(std::string("/proc/") + e->d_name + "/comm");
        std::string comm;
        if (std::getline(c, comm) && comm == "sleep") none = false;
    }
    std::puts(yes(none));
}
""",
    "go": r"""package main

import (
	"fmt"
	"os"
	"strings"
)

func main() {
	has := func(p string) bool { _, err := os.Stat(p); return err == nil }
	_, env := os.LookupEnv("SBX_LEFT")
	wd, _ := os.Getwd()
	fmt.Println(has("left.txt"), has("/tmp/left-tmp"), env, has("/dev/shm/sbx-left"), wd)
	none := true
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if err == nil && strings.TrimSpace(string(b)) == "sleep" {
			none = false
		}
	}
	fmt.Println(none)
}
""",
}


@pytest.mark.parametrize("lang", LANGS + COMPILED)
def test_nothing_passes_between_warm_runs(server, lang):
    skip_unless_image_has(lang)
    kw = {"timeout": GO_TIMEOUT} if lang == "go" else {}
    sc = server.warm_run(LEAVE[lang], lang, **kw)
    assert sc["status"] == "ok" and sc["stdout"] == "left\n", sc
    # the box was closed with its run: the detached sleep is gone, seen from the host
    deadline = time.monotonic() + 10
    while find_marked(server.mark, "sleep") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert find_marked(server.mark, "sleep") == []
    sc = server.warm_run(LOOK[lang], lang, **kw)
    assert sc["status"] == "ok", sc
    first, second = sc["stdout"].splitlines()
    assert [w.lower() for w in first.split()] == ["false"] * 4 + ["/workspace"], sc
    # python lists every process it sees unless they are pid 1 and itself;
    # in an MXC box pid 1 is MXC's bwrap, and the agent is another
    assert second.lower() == "true" or (MXC and lang == "python" and sorted(
        ast.literal_eval(second)) == ["bwrap", "python3", "sbx-agent"]), sc


# A run that lives until the test releases it (SIGUSR1, whose handler ends
# it with status 0), 8 s at most: it used to sleep the 8 s whole. The test
# reads the namespaces while it lives, then releases it.
HOLD = ("import signal, sys, time\n"
        "signal.signal(signal.SIGUSR1, lambda *_: sys.exit(0))\ntime.sleep(8)")


def release(pid, sig=signal.SIGUSR1, timeout=8.0):
    """Ends a HOLD run in pid once its handler for sig is in place (the
    signal sooner would kill it); a run that never gets there ends by its
    own bound."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if int(proc_status(pid).get("SigCgt", "0"), 16) & (1 << (sig - 1)):
                os.kill(pid, sig)
                return
        except (OSError, ValueError):
            return  # gone: the run ended
        time.sleep(0.02)


def test_each_warm_run_has_its_own_namespaces(server):
    """Seen from the host, while both live: a warm run's process and the
    pre-started interpreter of the sandbox made after it are in different
    mount, pid, ipc and uts namespaces, neither of them the server's.
    (Both must be alive: the kernel reuses a dead namespace's number.)"""
    def ns(pid):
        return {k: os.readlink("/proc/%d/ns/%s" % (pid, k)) for k in ("mnt", "pid", "ipc", "uts")}

    server.wait_ready("python")
    time.sleep(3)  # ready, not still starting
    (a,) = server.waiting("python")
    out = {}
    t = threading.Thread(target=lambda: out.update(server.run(HOLD)))
    t.start()
    try:
        deadline = time.monotonic() + 6
        while not [p for p in server.waiting("python") if p != a]:
            assert time.monotonic() < deadline, "no sandbox was made after the run took one"
            time.sleep(0.05)
        # one or two: taking the last ready sandbox refills ahead (pool.c)
        b = [p for p in server.waiting("python") if p != a][0]
        first, second, host = ns(a), ns(b), ns(server.s.pid)
        assert a in server.waiting("python"), "the run ended too soon"
    finally:
        release(a)
        t.join()
    assert out.get("warm") is True and out["status"] == "ok", out
    for k in first:
        assert len({first[k], second[k], host[k]}) == 3, (k, first, second, host)


def test_pooled_interpreters_are_confined(server):
    """A pre-started interpreter is sandboxed before any code reaches it:
    no capabilities, no_new_privs, the seccomp filter, not root."""
    server.wait_ready("python")
    for pid in server.waiting("python"):
        st = proc_status(pid)
        assert st["NoNewPrivs"] == "1", st
        assert st["Seccomp"] == "2", st
        for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            assert int(st[k], 16) == 0, (k, st)
        assert st["Uid"].split()[0] != "0", st


# --------------------------------------------------------------------------
# A warm run is a cold run, made earlier

SAME = {
    "python": [
        ("import os, sys\nprint(sys.argv, __file__, __name__, sys.path[0], os.getcwd())\n"
         "print(sorted(k for k in globals()), __loader__.__class__.__name__, __spec__)", ""),
        ("import os\nprint(sorted(os.environ.items()))", ""),
        ("import sys\nprint(repr(sys.stdin.read()))", "line one\nline two"),
        ("import sys\nprint('bye'); sys.exit(3)", ""),
        ("def f():\n    raise ValueError('boom')\nf()", ""),
        ("x = (\n", ""),
        ("import atexit\natexit.register(lambda: print('at exit'))\nprint('main')", ""),
        ("f = open('unclosed.txt', 'w'); f.write('kept')\n", ""),
        ("import os\nos.kill(os.getpid(), 9)", ""),
    ],
    "javascript": [
        ("console.log(process.argv.slice(1), __filename, require.main === module,"
         " process.execArgv, process.cwd())", ""),
        ("console.log(Object.entries(process.env).sort())", ""),
        ("let d = ''; process.stdin.on('data', c => d += c);"
         " process.stdin.on('end', () => console.log(JSON.stringify(d)))", "line one\nline two"),
        ("console.log('bye'); process.exit(3)", ""),
        ("setTimeout(() => { throw new Error('boom') }, 1)", ""),
        ("import os from 'os';\nconsole.log(typeof os.cpus, import.meta.url)", ""),
        ("const cp = require('child_process');\n"
         "if (process.argv[2] === 'child') { console.log('child', process.execArgv); }\n"
         "else { cp.fork(__filename, ['child']).on('exit', c => console.log('forked', c)); }", ""),
        ("let x = ;", ""),
    ],
    # R reads its program from a pipe (langs/r/prestart.R): commandArgs()
    # names /dev/fd/3 there, so no program here prints it
    "r": [
        ("x <- 1:3\nx\nprint(ls(all.names = TRUE))\nprint(search())\n"
         "print(c(interactive(), getwd(), is.null(.Last.value)))", ""),
        ("e <- Sys.getenv()\nprint(e[names(e) != 'R_SESSION_TMPDIR'])", ""),
        ("print(readLines(file('stdin')))", "line one\nline two"),
        ("print(readLines(file('stdin')))", ""),
        ("cat('bye\\n'); quit(status = 3)", ""),
        ("f <- function() stop('boom')\ng <- function() f()\ng()", ""),
        ("y <- c(1,\n  2 3)", ""),
        ("warning('w1')\nfor (i in 1:2) warning(i)\nh <- function() warning('in h')\nh()", ""),
        (".Last <- function() cat('at last\\n')\n"
         "reg.finalizer(globalenv(), function(e) cat('finalized\\n'), onexit = TRUE)\n"
         "cat('main\\n')", ""),
        ("plot(1:10)\nprint(dev.cur())", ""),
        ("tools::pskill(Sys.getpid(), 9)", ""),
    ],
}
FIELDS = ("status", "exit_code", "limit", "stdout", "stderr", "artifacts")
# The one documented difference: an error thrown synchronously by a
# JavaScript program's top level has the driver's frames ([eval]) at the
# bottom of its stack, where a cold run has node's run_main_module.
INTERNAL = re.compile(r"^    at (.*\[eval\].*|.*node:internal/.*)\n", re.M)


def same_text(k, lang, text):
    return INTERNAL.sub("", text) if (k == "stderr" and lang == "javascript") else text


@pytest.mark.parametrize("lang", LANGS)
def test_warm_runs_behave_as_cold_runs(server, lang):
    skip_unless_image_has(lang)
    cold = Server(pool="0", mark=server.mark)  # the same environment
    try:
        for code, stdin in SAME[lang]:
            args = {"stdin": stdin} if stdin else {}
            c = cold.run(code, lang, **args)
            assert "warm" not in c, c
            w = server.warm_run(code, lang, **args)
            for k in FIELDS:
                if k == "artifacts":  # the same files, under each run's own uri
                    assert [(a["path"], a["size"]) for a in w[k]] == \
                        [(a["path"], a["size"]) for a in c[k]], (code, w, c)
                else:
                    assert same_text(k, lang, w[k]) == same_text(k, lang, c[k]), (k, code, w, c)
    finally:
        cold.finish()


# --------------------------------------------------------------------------
# Limits, and what is not pooled


def test_warm_run_timeout_and_next_run(server):
    sc = server.warm_run("while True: pass", timeout=1)
    assert sc["status"] == "timeout" and sc["limit"] == "wall_time", sc
    sc = server.warm_run("print('after')")
    assert sc["status"] == "ok" and sc["stdout"] == "after\n", sc


def test_warm_run_output_cap():
    s = Server(extra={"LLM_SANDBOX_OUTPUT_BYTES": "1000"})
    try:
        sc = s.warm_run("print('x' * 5000)")
        assert sc["stdout_truncated"] is True and len(sc["stdout"]) <= 1000, sc
        assert sc["stdout_bytes"] == 5001, sc
    finally:
        s.finish()


def test_r_runs_in_its_pre_started_interpreter(server):
    """A warm R run is read by the R that waited (its one visible mark: it
    reads its program from /dev/fd/3); one with stdin data starts R in its
    ready sandbox as a cold run would (--file=main.R)."""
    skip_unless_image_has("r")
    args = "cat(grep('^--file=', commandArgs(), value = TRUE), '\\n', sep = '')"
    sc = server.warm_run(args, "r")
    assert sc["status"] == "ok" and sc["stdout"] == "--file=/dev/fd/3\n", sc
    sc = server.warm_run(args, "r", stdin="data\n")
    assert sc["status"] == "ok" and sc["stdout"] == "--file=main.R\n", sc


def test_languages_without_an_interpreter_to_start_still_pool(server):
    """Ruby has no language.prestart: its pooled sandbox runs the program
    the usual way, and that is still a warm run."""
    skip_unless_image_has("ruby")
    if not shutil.which("ruby") and not CONTAINER:
        pytest.skip("ruby is not installed here")
    server.run("puts 1", "ruby")  # the first run of a kind makes its pool
    deadline = time.monotonic() + 60
    while True:
        sc = server.run("puts 6 * 7", "ruby")
        assert sc["status"] == "ok" and sc["stdout"] == "42\n", sc
        if sc.get("warm") or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert sc.get("warm") is True, sc


# A program that says whether its build could use the warm-up set: for
# C++ the precompiled <bits/stdc++.h> in /warm, for Go its GOCACHE's links
# into /warm (the seed, run before a build, not before a cached one).
WARM_SET = {
    "cpp": '#include <cstdio>\n#include <unistd.h>\n// %s\n'
           'int main() { std::printf("%%d\\n", access("/warm/include/bits/stdc++.h.gch", R_OK)); }\n',
    "go": 'package main\n\nimport (\n\t"fmt"\n\t"os"\n\t"path/filepath"\n)\n\n// %s\n'
          'func main() {\n\tlinks := 0\n'
          '\tfilepath.Walk(os.Getenv("GOCACHE"), func(p string, fi os.FileInfo, err error) error {\n'
          '\t\tif err == nil && fi.Mode()&os.ModeSymlink != 0 {\n\t\t\tlinks++\n\t\t}\n'
          '\t\treturn nil\n\t})\n\tfmt.Println(links > 100)\n}\n',
}
BUILT = {"cpp": "0\n", "go": "true\n"}


@pytest.mark.parametrize("lang", COMPILED)
def test_compiled_languages_run_warm_with_their_warm_up_set(server, lang):
    """A ready sandbox of a compiled language mounts the warm-up set: a new
    program builds in it as in a cold one, and a program the compile cache
    holds runs from it without a build (and, for Go, without the seed)."""
    skip_unless_image_has(lang)
    skip_unless_warm_sets()
    kw = {"timeout": GO_TIMEOUT} if lang == "go" else {}
    deadline = time.monotonic() + 120
    while True:  # until a ready sandbox takes a program no earlier run built
        src = WARM_SET[lang] % uuid.uuid4().hex
        sc = server.run(src, lang, **kw)
        if sc.get("warm") or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert sc.get("warm") is True, sc
    assert sc["status"] == "ok" and sc["stdout"] == BUILT[lang], sc
    assert sc["build"] == {"cached": False}, sc
    sc = server.warm_run(src, lang, **kw)
    assert sc["status"] == "ok" and sc["build"] == {"cached": True}, sc
    # a cached Go build was not seeded: its GOCACHE has no links
    assert sc["stdout"] == ("false\n" if lang == "go" else BUILT[lang]), sc


def test_a_ready_interpreter_killed_while_waiting(server):
    """Its sandbox is still fresh: the run starts the program as a cold
    run would, in that sandbox."""
    server.warm_run("pass")
    server.wait_ready("python")
    time.sleep(3)  # ready, not still starting (that would be a failed make, retried)
    killed = server.waiting("python")
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    # reaped by the agent, whose exit report is then on its way before the
    # run's first request (one that dies in the instant before the go is
    # reported as the run's outcome: documented in pool.c)
    deadline = time.monotonic() + 10
    while any(os.path.exists("/proc/%d" % p) for p in killed) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    sc = server.warm_run("print(6 * 7)")
    assert sc["status"] == "ok" and sc["stdout"] == "42\n", sc


def test_pool_off():
    s = Server(pool="0")
    try:
        time.sleep(1)
        assert s.waiting("python") == []
        for _ in range(3):
            sc = s.run("print(1)")
            assert sc["status"] == "ok" and "warm" not in sc, sc
        assert s.waiting("python") == []
    finally:
        s.finish()


BROKEN = """\
# a data-only Python whose pre-started interpreter never says ready
name: brokenpy
kind: language
version: 1.0.0
abi: "1.0"
description: Test language for test_pool.py
language:
  source_file: main.py
  run: [python3, "{source}"]
  prestart:
    run: [python3, -c, "{driver}"]
    driver: brokenpy-prestart.py
"""


def test_a_broken_warm_path_falls_back_to_cold_runs(tmp_path):
    """A pre-started interpreter that exits instead of saying ready: the
    kind runs cold, correctly, and the server's log says why, once."""
    if CONTAINER:
        pytest.skip("the test language has no image on %s" % BACKEND)
    (tmp_path / "brokenpy.yaml").write_text(BROKEN)
    (tmp_path / "brokenpy-prestart.py").write_text("import sys\nsys.exit('prestart broken here')\n")
    s = Server(extra={"LLM_SANDBOX_PLUGIN_PATH": str(tmp_path),
                      "LLM_SANDBOX_DEFAULT_LANGUAGE": "brokenpy", "LLM_SANDBOX_LOG_LEVEL": "warn"})
    try:
        deadline = time.monotonic() + 60
        while b"no warm sandboxes" not in s.s.stderr and time.monotonic() < deadline:
            time.sleep(0.1)
        log = s.s.stderr.decode(errors="replace")
        assert "no warm sandboxes" in log and "prestart broken here" in log, log
        for _ in range(3):
            sc = s.run("print(6 * 7)", "brokenpy")
            assert sc["status"] == "ok" and sc["stdout"] == "42\n" and "warm" not in sc, sc
        # the kind is marked broken, not retried after every run
        assert s.s.stderr.decode(errors="replace").count("no warm sandboxes") == 1
    finally:
        s.finish()


# --------------------------------------------------------------------------
# The pool ends with the server


def test_ready_sandboxes_end_with_the_server():
    s = Server()
    s.wait_ready("python", 1)
    s.finish()
    left = find_marked(s.mark)
    assert left == [], describe_pids(left) + "\n" + s.s.stderr.decode(errors="replace")[-2000:]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_ends_the_server_and_its_ready_sandboxes(sig):
    """The pool's thread takes no signal: the server's own handling ends it
    cleanly (exit 128 + the signal, mcp/serve.h), closing what the pool
    holds."""
    s = Server()
    s.wait_ready("python", 1)
    s.s.proc.send_signal(sig)
    assert s.s.proc.wait(30) == 128 + sig, s.s.stderr.decode(errors="replace")
    left = find_marked(s.mark)
    assert left == [], describe_pids(left) + "\n" + s.s.stderr.decode(errors="replace")[-2000:]


def test_ready_sandboxes_end_when_the_server_is_killed():
    s = Server()
    s.wait_ready("python", 1)
    s.run("print(1)", "javascript")  # a second kind
    s.wait_ready("javascript", 1)
    os.kill(s.s.pid, signal.SIGKILL)
    s.s.proc.wait(10)
    deadline = time.monotonic() + 30
    while find_marked(s.mark) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert find_marked(s.mark) == []
    # a restarted server sweeps what the dead one may have left (cgroups,
    # containers); the harness then checks that nothing is left
    t = Server(pool="0")
    assert t.run("print(1)")["status"] == "ok"
    t.finish()
