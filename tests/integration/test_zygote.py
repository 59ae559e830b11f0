# SPDX-License-Identifier: MIT
"""Zygote runs (core/src/sessions/pool.c, core/agent/zygote.inc,
langs/python/zygote.py) through the real MCP server on the backend under
test: one pre-loaded Python interpreter per zygote box forks each run into
namespaces of its own under the strict seccomp filter.

What must hold: every run asserted here did come from the zygote (the
result says "sandbox": "zygote", so no test passes on the cold path);
nothing passes from one run to the next, module state the zygote loaded
included; a forked run is confined exactly as a cold one (no capabilities,
no_new_privs, the filter, its own mount, pid, ipc and network namespaces,
pid 1 of its own); it behaves as a cold run; a zygote that cannot isolate
a run is never used for it: the run starts cold and says so; with the
setting off no run is forked.

The zygote is used only where the limits are the rlimit fallbacks (a
child would share its box's cgroup otherwise: pool.c says why), so as
root these servers run with LLM_SANDBOX_CGROUP=off, and one test checks
that with cgroups the runs are never forked.
"""
import os
import threading
import time

import pytest

from conftest import (BACKEND, CONTAINER, MXC, ROOT, WSL2, cgroups_enforced, find_marked,
                      proc_status)
from test_pool import LEAVE, LOOK, Server

# the local jails make zygote boxes (plugin.h, SBX_BOX_ZYGOTE): bwrap and nsjail
pytestmark = [pytest.mark.contract,
              pytest.mark.skipif(CONTAINER or MXC or WSL2 or BACKEND not in ("bwrap", "nsjail"),
                                 reason="zygote boxes are made by bwrap and nsjail only")]

ZYGOTE_ENV = {"LLM_SANDBOX_ZYGOTE": "true", "LLM_SANDBOX_CGROUP": "off"}


class ZygoteServer(Server):
    def __init__(self, extra=None, **kw):
        env = dict(ZYGOTE_ENV)
        env.update(extra or {})
        super().__init__(extra=env, **kw)

    def zygote_run(self, code, **kw):
        """A run forked from the zygote. A kind gets its pool (and zygote
        box) from its first run, which is cold; until the zygote is up,
        runs take a ready sandbox or start cold (and are repeated)."""
        deadline = time.monotonic() + 60
        while True:
            sc = self.run(code, **kw)
            if sc.get("sandbox") == "zygote":
                assert sc.get("warm") is True, sc
                return sc
            assert sc.get("sandbox") in ("cold", "ready"), sc
            assert time.monotonic() < deadline, "no run was forked from a zygote: %r" % (sc,)
            time.sleep(0.1)


@pytest.fixture
def zserver():
    s = ZygoteServer()
    yield s
    s.finish()


def test_nothing_passes_between_zygote_runs(zserver):
    sc = zserver.zygote_run(LEAVE["python"])
    assert sc["status"] == "ok" and sc["stdout"] == "left\n", sc
    # the run's pid namespace ended with it: the detached sleep is gone
    deadline = time.monotonic() + 10
    while find_marked(zserver.mark, "sleep") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert find_marked(zserver.mark, "sleep") == []
    sc = zserver.zygote_run(LOOK["python"] + "import os\nprint(os.listdir('/dev/shm'))\n")
    assert sc["status"] == "ok", sc
    first, second, shm = sc["stdout"].splitlines()
    assert [w.lower() for w in first.split()] == ["false"] * 4 + ["/workspace"], sc
    assert second == "True" and shm == "[]", sc


def test_module_state_the_zygote_loaded_does_not_pass(zserver):
    """json is loaded in the zygote before any run: a run that patches it
    patches its own copy."""
    sc = zserver.zygote_run(
        "import json, sys\n"
        "assert 'json' in sys.modules\n"
        "json.dumps = lambda *a, **k: 'patched'\n"
        "json.JSONEncoder.encode = lambda self, o: 'patched'\n"
        "sys.modules['collections'].OrderedDict = None\n"
        "print(json.dumps([1]))\n")
    assert sc["status"] == "ok" and sc["stdout"] == "patched\n", sc
    sc = zserver.zygote_run(
        "import json, collections\n"
        "print(json.dumps([1]), json.JSONEncoder().encode({'a': 2}), "
        "collections.OrderedDict is not None)\n")
    assert sc["status"] == "ok" and sc["stdout"] == '[1] {"a": 2} True\n', sc


def test_random_state_is_the_runs_own(zserver):
    outs = set()
    for _ in range(3):
        sc = zserver.zygote_run("import random; print(random.getrandbits(64))")
        assert sc["status"] == "ok", sc
        outs.add(sc["stdout"])
    assert len(outs) == 3, outs


CONFINED = r"""
import ctypes, os, socket
st = dict(l.split(':\t', 1) for l in open('/proc/self/status').read().splitlines())
print(os.getpid(), st['NoNewPrivs'].strip(), st['Seccomp'].strip(),
      all(int(st[k], 16) == 0 for k in ('CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb')))
libc = ctypes.CDLL(None, use_errno=True)
for what, r in (('unshare', lambda: libc.unshare(0x20000)),
                ('userns', lambda: libc.unshare(0x10000000)),
                ('mount', lambda: libc.mount(b'tmpfs', b'/tmp', b'tmpfs', 0, None)),
                ('umount', lambda: libc.umount2(b'/proc', 2))):
    print(what, r(), ctypes.get_errno())
print(sorted(p for p in os.listdir('/proc') if p.isdigit()) == ['1'] or
      sorted(p for p in os.listdir('/proc') if p.isdigit()))
try:
    socket.create_connection(('10.0.2.2', 53), timeout=2)
    print('net reachable')
except OSError as e:
    print('net', type(e).__name__)
print(sorted(i[1] for i in socket.if_nameindex()))
"""


def test_a_zygote_run_is_confined(zserver):
    """Everything a cold run's program gets, the forked child has: pid 1
    of its own pid namespace (the zygote and the agent out of sight), no
    capabilities, no_new_privs and the filter (no unshare, no mount), a
    network namespace with loopback only."""
    sc = zserver.zygote_run(CONFINED)
    assert sc["status"] == "ok", sc
    lines = sc["stdout"].splitlines()
    assert lines[0] == "1 1 2 True", sc
    for line in lines[1:5]:
        what, r, errno_ = line.split()
        assert r == "-1" and errno_ == "1", sc  # EPERM from the filter
    assert lines[5] == "True", sc
    assert lines[6].startswith("net ") and lines[6] != "net reachable", sc
    assert lines[7] == "['lo']", sc


def test_a_zygote_run_has_its_own_namespaces(zserver):
    """Seen from the host while it runs: the child's mount, pid, ipc and
    network namespaces are neither its zygote's nor the server's."""
    def ns(pid):
        return {k: os.readlink("/proc/%d/ns/%s" % (pid, k)) for k in ("mnt", "pid", "ipc", "net")}

    zserver.zygote_run("pass")
    out = {}
    t = threading.Thread(target=lambda: out.update(
        zserver.run("import time; open('/tmp/sbx-zyg-child', 'w'); time.sleep(6)")))
    t.start()
    try:
        deadline = time.monotonic() + 5
        child = None
        while child is None:
            for p in find_marked(zserver.mark, "python3"):
                try:
                    if os.readlink("/proc/%d/cwd" % p) == "/workspace" and \
                            proc_status(p).get("NSpid", "").split()[-1:] == ["1"]:
                        child = p
                except OSError:
                    pass
            assert time.monotonic() < deadline, "no forked child seen"
            time.sleep(0.05)
        zygotes = [p for p in find_marked(zserver.mark, "python3")
                   if p != child and proc_status(p).get("NSpid", "").split()[-1:] != ["1"]]
        assert zygotes, "no zygote seen"
        mine, theirs, host = ns(child), ns(zygotes[0]), ns(zserver.s.pid)
    finally:
        t.join()
    assert out.get("sandbox") == "zygote" and out["status"] == "ok", out
    for k in mine:
        assert len({mine[k], theirs[k], host[k]}) == 3, (k, mine, theirs, host)


SAME = r"""
import os, sys
print(sys.argv, __name__, os.path.basename(__file__), sys.path[0], os.getcwd())
print(sum(int(x) for x in sys.stdin.read().split()))
print(sorted(k for k in os.environ if not k.startswith('SBX_TEST_MARK')))
sys.stderr.write('to stderr\n')
import warnings
1 / int(os.environ.get('ZERO', '0'))
"""


def test_a_zygote_run_behaves_as_a_cold_run(zserver):
    cold = ZygoteServer(pool="0")
    try:
        c = cold.run(SAME, stdin="1 2 3")
    finally:
        cold.finish()
    assert c.get("sandbox") == "cold", c
    z = zserver.zygote_run(SAME, stdin="1 2 3")
    for k in ("status", "exit_code", "stdout"):
        assert z[k] == c[k], (k, z, c)
    assert z["stderr"] == c["stderr"], (z["stderr"], c["stderr"])
    assert "ZeroDivisionError" in z["stderr"] and z["exit_code"] == 1, z


def test_a_zygote_run_ends_as_python_does(zserver):
    """Without the interpreter's finalization (zygote.py says why), what a
    program sees of its end holds: non-daemon threads finish, atexit
    functions run, buffered output is flushed, sys.exit's code and message."""
    sc = zserver.zygote_run(
        "import atexit, sys, threading, time\n"
        "sys.stdout = open(1, 'w', buffering=1 << 16, closefd=False)\n"
        "atexit.register(lambda: print('atexit'))\n"
        "threading.Thread(target=lambda: (time.sleep(0.3), print('thread'))).start()\n"
        "print('buffered', end='')\n"
        "sys.exit('bye')\n")
    assert sc["stdout"] == "bufferedthread\natexit\n" and sc["stderr"] == "bye\n", sc
    assert sc["exit_code"] == 1, sc
    sc = zserver.zygote_run("raise SystemExit(7)")
    assert sc["exit_code"] == 7 and sc["stderr"] == "", sc


def test_zygote_run_artifacts_and_a_fresh_workspace(zserver):
    sc = zserver.zygote_run("open('out.txt', 'w').write('hello')\nimport os\n"
                            "os.chmod('.', 0o700)\nprint(sorted(os.listdir('.')))")
    assert sc["status"] == "ok" and sc["stdout"] == "['main.py', 'out.txt']\n", sc
    assert [a["path"] for a in sc["artifacts"]] == ["out.txt"], sc
    sc = zserver.zygote_run("import os, stat\nprint(sorted(os.listdir('.')), "
                            "oct(stat.S_IMODE(os.stat('.').st_mode)))")
    assert sc["status"] == "ok" and sc["stdout"] == "['main.py'] 0o755\n", sc


def test_zygote_run_timeout_then_the_next_run(zserver):
    zserver.zygote_run("pass")
    sc = zserver.run("import time\ntime.sleep(100)", timeout=2)
    assert sc["status"] == "timeout", sc
    sc = zserver.zygote_run("print(6 * 7)")
    assert sc["status"] == "ok" and sc["stdout"] == "42\n", sc


def test_zygote_run_limits_hold(zserver):
    """The rlimit fallbacks apply to the child as to a cold run's program."""
    zserver.zygote_run("pass")
    sc = zserver.zygote_run("x = bytearray(2 << 30)", memory="256m")
    assert sc["status"] == "oom" or "MemoryError" in sc["stderr"], sc


def test_concurrent_runs_while_the_zygote_is_busy():
    """A zygote box forks one run at a time, and a kind has at most
    LLM_SANDBOX_POOL of them (1 here): of three calls in flight (two run
    at once on this machine's two CPUs, or more) not all are forked, and
    the others still run, in a ready sandbox or cold."""
    s = ZygoteServer(pool="1", extra={"LLM_SANDBOX_MAX_CONCURRENT": "3"})
    try:
        s.zygote_run("pass")
        ids = [s.s.request_async("tools/call", {"name": "execute_code", "arguments": {
            "code": "import time; time.sleep(1); print(1)", "language": "python"}})
            for _ in range(3)]
        out = [s.s.response(i, 120)["result"]["structuredContent"] for i in ids]
    finally:
        s.finish()
    assert [sc["stdout"] for sc in out] == ["1\n"] * 3, out
    kinds = [sc["sandbox"] for sc in out]
    assert "zygote" in kinds and set(kinds) - {"zygote"}, kinds


def test_runs_in_flight_together_each_fork(zserver):
    """A run that finds the kind's zygote box busy makes the kind want one
    more (up to LLM_SANDBOX_POOL): once the filler has made it, two runs in
    flight together are both forked, each from a box of its own."""
    zserver.zygote_run("pass")
    code = "import os, time; time.sleep(0.5); print(os.getpid())"
    deadline, seen = time.monotonic() + 60, []
    while True:
        ids = [zserver.s.request_async("tools/call", {"name": "execute_code", "arguments": {
            "code": code, "language": "python"}}) for _ in range(2)]
        out = [zserver.s.response(i, 120)["result"]["structuredContent"] for i in ids]
        assert all(sc["status"] == "ok" for sc in out), out
        kinds = [sc["sandbox"] for sc in out]
        seen.append(kinds)
        if kinds == ["zygote", "zygote"]:
            break
        assert time.monotonic() < deadline, "two runs in flight were never both forked: %r" % seen
        time.sleep(0.2)


# (program, what it prints): a trivial run, a run whose background child
# (its own, or a subprocess) still holds stdout when the program ends, and
# one that fills the pipe
BACK_TO_BACK = [
    ("print('hi')", "hi\n"),
    ("import os, time\nif os.fork() == 0:\n    time.sleep(5)\nprint('forked')", "forked\n"),
    ("import subprocess\nsubprocess.Popen(['sleep', '5'])\nprint('bg')", "bg\n"),
    ("import sys\nsys.stdout.write('x' * 100000)", "x" * 100000),
]


def test_zygote_runs_back_to_back_beside_ready_sandboxes():
    """Forked runs while the pool makes ready sandboxes beside the zygote
    box (two other runs in flight with each, so boxes start all the time
    and the CPUs are busy). A forked run once ended now and then without
    its end being seen (killed at its timeout, status "timeout"): the
    zygote read the run's "isolated" record as its parent's, which holds
    the run's pid, and told the agent pid 0 (zygote.py's two pipes)."""
    s = ZygoteServer(pool="4")
    bad, forked = [], 0
    try:
        s.zygote_run("pass")
        for i in range(450):
            code, want = BACK_TO_BACK[i % len(BACK_TO_BACK)]
            ids = [s.s.request_async("tools/call", {"name": "execute_code", "arguments": {
                "code": c, "language": "python", "timeout": 10}})
                for c in (code, "print(1)", "print(2)")]
            for k, (rid, w) in enumerate(zip(ids, (want, "1\n", "2\n"))):
                sc = s.s.response(rid, 120)["result"]["structuredContent"]
                forked += sc.get("sandbox") == "zygote"
                if sc.get("status") != "ok" or sc.get("stdout") != w:
                    bad.append((i, k, sc.get("sandbox"), sc.get("status"),
                                sc.get("stdout", "")[:40], sc.get("stderr", "")[:200]))
    finally:
        s.finish()
    assert not bad, "%d of %d runs went wrong: %r" % (len(bad), 3 * 450, bad[:5])
    assert forked >= 100, "only %d of %d runs were forked from the zygote" % (forked, 3 * 450)


def test_zygote_off_forks_nothing():
    s = Server(extra={"LLM_SANDBOX_ZYGOTE": "false", "LLM_SANDBOX_CGROUP": "off"})
    try:
        seen = {s.run("pass")["sandbox"] for _ in range(6)}
    finally:
        s.finish()
    assert seen <= {"cold", "ready"} and "zygote" not in seen, seen


@pytest.mark.skipif(not ROOT, reason="cgroups are root's here")
def test_no_zygote_where_cgroups_hold_the_limits():
    if not cgroups_enforced():
        pytest.skip("no cgroup enforces the limits here")
    s = Server(extra={"LLM_SANDBOX_ZYGOTE": "true"})
    try:
        seen = set()
        for _ in range(8):
            seen.add(s.run("pass")["sandbox"])
            time.sleep(0.2)
    finally:
        s.finish()
    assert "zygote" not in seen and "ready" in seen, seen


BROKEN_CHILD = r'''
def _sbx_main():
    import os, socket, struct
    ctl = socket.socket(fileno=3)
    ctl.recv(1 << 16)
    ctl.send(b"ready")
    while True:
        msg, anc, _, _ = ctl.recvmsg(1 << 20, socket.CMSG_SPACE(12))
        if not msg:
            os._exit(0)
        for _, _, data in anc:
            for i in range(0, len(data) - len(data) % 4, 4):
                os.close(struct.unpack_from("i", data, i)[0])
        ctl.send(struct.pack("<iII", 1, 0, 7))  # EPERM at the filter

_sbx_main()
'''


BROKEN = """\
# a data-only Python whose zygote refuses every run
name: brokenzyg
kind: language
version: 1.0.0
abi: "1.0"
description: Test language for test_zygote.py
language:
  source_file: main.py
  run: [python3, "{source}"]
  zygote:
    run: [python3, -c, "{driver}"]
    driver: brokenzyg-zygote.py
"""


def test_a_zygote_that_cannot_isolate_a_run_is_not_used(tmp_path):
    """Fail closed: a child that could not get its filter never runs the
    program; the run starts cold and its result says so."""
    (tmp_path / "brokenzyg.yaml").write_text(BROKEN)
    (tmp_path / "brokenzyg-zygote.py").write_text(BROKEN_CHILD)
    s = ZygoteServer(extra={"LLM_SANDBOX_PLUGIN_PATH": str(tmp_path)})
    try:
        deadline = time.monotonic() + 60
        while True:
            sc = s.run("print('ran')", "brokenzyg")
            assert sc["status"] == "ok" and sc["stdout"] == "ran\n", sc
            assert sc["sandbox"] != "zygote", sc
            if any("zygote box was unusable" in w for w in sc.get("warnings", [])):
                break
            assert time.monotonic() < deadline, "the broken zygote was never tried"
            time.sleep(0.1)
        assert sc["sandbox"] == "cold" and "seccomp filter" in " ".join(sc["warnings"]), sc
    finally:
        s.finish()
