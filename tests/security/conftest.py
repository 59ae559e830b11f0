# SPDX-License-Identifier: MIT
"""The adversarial security suite (issue 9): the real llm-sandbox binary
under a real local jail, attacked by the code it runs and by its arguments,
and checked from the host wherever the host can see (/proc, cgroupfs,
canary files and listeners).

    /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/security
    SBX_TEST_BACKEND=nsjail /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/security

It reuses the integration suite's harness (tests/integration/conftest.py):
the CLI runner, the clean environment with its marker variable, the
machine-wide session lock and the autouse `nothing_left_behind` check. That
file is loaded once, under the name `sbx_itest`, and its names re-exported
here, so test modules write `from conftest import ...` as the integration
tests do. Run this directory in its own pytest session (ctest does): a
session that also collects tests/integration would load the harness twice.
"""
import importlib.util
import os
import sys

_HARNESS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "integration", "conftest.py")


def _load_harness():
    if "sbx_itest" in sys.modules:
        return sys.modules["sbx_itest"]
    # the harness imports its neighbours (containers.py) by name
    sys.path.insert(0, os.path.dirname(_HARNESS))
    spec = importlib.util.spec_from_file_location("sbx_itest", _HARNESS)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["sbx_itest"] = mod
    spec.loader.exec_module(mod)
    return mod


itest = _load_harness()
# Helpers, the fixtures (nothing_left_behind, canary, canary6) and the
# pytest_configure hook with its session lock.
from sbx_itest import *  # noqa: E402,F401,F403

import contextlib  # noqa: E402
import json  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

import pytest  # noqa: E402

import containers  # noqa: E402  (tests/integration, on the path since the harness loaded)

# tests/mcp's JSON-RPC client, for the modules that attack through MCP
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "mcp"))
import mcptest  # noqa: E402

# The documented environment of a JavaScript program: the base alone (the
# javascript manifest adds nothing).
ENV_BY_LANG = {"python": dict(itest.BASE_ENV, **itest.PYTHON_ENV),
               "javascript": dict(itest.BASE_ENV)}
COMM_BY_LANG = {"python": "python3", "javascript": "node"}

# Programs held at a barrier so the host can look at them: they create
# /workspace/.ready when set up, then wait (at most 20 s) for the host's
# SIGUSR2. (The host cannot create a file in the workspace: its uid is not
# mapped into the sandbox's user namespace, so the kernel says EOVERFLOW.)
HOLD = {
    "python": "import signal, time\nreleased = []\n"
              "signal.signal(signal.SIGUSR2, lambda *a: released.append(1))\n"
              "open('/workspace/.ready', 'w').close()\nt0 = time.monotonic()\n"
              "while not released and time.monotonic() - t0 < 20:\n    time.sleep(0.02)\n",
    "javascript": "const hold = setTimeout(() => {}, 20000);\n"
                  "process.on('SIGUSR2', () => clearTimeout(hold));\n"
                  "require('fs').writeFileSync('/workspace/.ready', '');\n",
}


class Live:
    """A run in progress, seen from the host."""

    def __init__(self, proc, mark):
        self.proc = proc
        self.mark = mark
        self.pid = None      # the sandboxed program's host pid
        self.start = None    # its start time (pid reuse guard)
        self.result = None   # the parsed JSON result, once it ended

    def release(self):
        """Let a HOLD program finish (harmless if it already did)."""
        st = itest.proc_stat(self.pid) if self.pid is not None else None
        if st and st[3] == self.start:
            try:
                os.kill(self.pid, signal.SIGUSR2)
            except OSError:
                pass


def ppid_of(pid):
    st = itest.proc_stat(pid)
    return st[2] if st else None


@contextlib.contextmanager
def live_run(src, *args, lang="python", comm=None, extra_env=None, ready_file=".ready"):
    """Start `run --json` of src; yield a Live once the program (process
    name comm) runs and, with ready_file, has created it in its working
    directory. On leaving, release the program and collect the result."""
    mark = itest.new_mark()
    env = itest.clean_env(extra_env, mark_value=mark)
    argv = [itest.SBX_BIN, "run", "--json", "--language", lang] + list(args) + ["--code", src]
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, cwd="/")
    itest._cli_pids.append(p.pid)
    live = Live(p, mark)
    comm = comm or COMM_BY_LANG[lang]
    try:
        deadline = time.monotonic() + 20
        while live.pid is None and time.monotonic() < deadline and p.poll() is None:
            found = itest.find_marked(mark, comm)
            if found and (ready_file is None or
                          os.path.exists("/proc/%d/cwd/%s" % (found[0], ready_file))):
                live.pid = found[0]
                live.start = itest.proc_stat(live.pid)[3]
            else:
                time.sleep(0.02)
        assert live.pid is not None, "no ready %s process of the run was seen from outside" % comm
        yield live
    finally:
        live.release()
        try:
            out, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        live.result = itest.Result(json.loads(out)) if out.strip() else None
        live.stderr = err


def run_lang(lang, src, *args, **kw):
    """Run src in lang with --json; the parsed result (Run in ['_run'])."""
    return itest.code(src, "--language", lang, *args, **kw)


def proc_tasks(pid):
    return sorted(int(t) for t in os.listdir("/proc/%d/task" % pid))


def read_text(path):
    with open(path) as f:
        return f.read()


def sandbox_uid_processes():
    """{(pid, starttime): comm} of live processes running as the sandbox's
    host uid (as root one of the sandboxes' own uids: nothing else runs as
    them). Found by uid, not by the marker variable or the name, which the
    code controls."""
    out = {}
    for pid in itest.all_pids():
        uid = itest.proc_uid(pid)
        if pid == os.getpid() or uid is None or not itest.is_sandbox_host_uid(uid):
            continue
        st = itest.proc_stat(pid)
        if st and st[1] not in ("Z", "X"):
            out[(pid, st[3])] = st[0]
    return out


def _foreign(pid):
    """Does pid descend from a live llm-sandbox that this test did not
    start (another engineer's run, an MCP test's server), or is it, in a
    local backend's session, in a container (of a daemon session that may
    run beside it: itest.DAEMON)? A survivor of our own run cannot: its CLI
    has exited, so its ancestry ends at init."""
    if not itest.DAEMON and itest.container_of(pid):
        return True
    return any(comm == "llm-sandbox" and p not in itest._cli_pids
               for p, comm in itest.ancestry(pid))


def survivors(before, grace=2.0):
    """Processes of the sandbox's host uid that appeared since `before` and
    are still alive after a short grace (a SIGKILLed tree takes a moment),
    except those of other llm-sandbox processes running on the machine."""
    deadline = time.monotonic() + grace
    while True:
        new = {k: v for k, v in sandbox_uid_processes().items()
               if k not in before and not _foreign(k[0])}
        if not new or time.monotonic() > deadline:
            return new
        time.sleep(0.05)


@pytest.fixture
def server():
    """An initialized MCP server on stdio; afterwards its stdout held only
    JSON-RPC lines and it ended with 0 when its input did."""
    s = mcptest.Server(env=clean_env())
    try:
        s.initialize()
        yield s
        assert s.bad_lines == [], s.bad_lines
        assert s.finish() == 0, s.stderr.decode(errors="replace")
    finally:
        s.kill()


def structured(r):
    return r["result"]["structuredContent"]


# --------------------------------------------------------------------------
# Container backends, seen from outside: the engine (through its CLI on the
# tests' private socket, which speaks the Engine API) and the host's /proc.

CONTAINER = itest.CONTAINER
OWNER_LABEL = "org.llm-sandbox.owner"
# Namespaces a container has of its own. Docker and Podman (rootful) give it
# no user namespace: the sandbox uid is the same inside and on the host, and
# it is a uid no host user has (README, "Security model").
CONTAINER_NAMESPACES = ("mnt", "pid", "ipc", "uts", "net", "cgroup")


def engine(*args):
    r = subprocess.run(containers.cli(BACKEND) + list(args), capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout


def owner_of(pid):
    """The owner label a run's containers carry: its front end's name, the
    same its cgroups have (conftest.owner_name)."""
    return itest.owner_name(pid)


def engine_containers(owner=None):
    """The engine's inspect of every container with our owner label (of
    one owner, if given)."""
    filt = OWNER_LABEL + ("=" + owner if owner else "")
    ids = engine("ps", "-aq", "--no-trunc", "--filter", "label=" + filt).split()
    out = []
    for i in ids:  # one at a time: a container may go between the two calls
        r = subprocess.run(containers.cli(BACKEND) + ["inspect", i], capture_output=True,
                           text=True, timeout=60)
        if r.returncode == 0:
            out += json.loads(r.stdout)
        else:
            assert "no such" in r.stderr.lower(), r.stderr
    return out


def engine_container_of(live):
    """The one container of a live run, found through the engine by the
    owner label of its front end; its State.Pid is the agent, and the
    program found by the marker must be a child of it (/proc)."""
    cts = engine_containers(owner_of(live.proc.pid))
    assert len(cts) == 1, [c["Id"] for c in cts]
    ct = cts[0]
    assert ct["State"]["Running"], ct["State"]
    agent = ct["State"]["Pid"]
    assert agent > 1 and ppid_of(live.pid) == agent, (agent, live.pid, ppid_of(live.pid))
    assert live.pid in proc_children(agent), (agent, proc_children(agent))
    return ct


def proc_children(pid):
    out = []
    for tid in proc_tasks(pid):
        try:
            out += [int(x) for x in read_text("/proc/%d/task/%d/children" % (pid, tid)).split()]
        except OSError:
            pass
    return out


def engine_idle(timeout=15.0):
    """Wait until the engine lists no container of ours; the ones left."""
    deadline = time.monotonic() + timeout
    while True:
        left = [c["Name"] for c in engine_containers()]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


# ---- what the host's /proc says of a sandboxed process (posture modules)


def task_status(pid, tid):
    """/proc/PID/task/TID/status as a dict."""
    out = {}
    for line in read_text("/proc/%d/task/%d/status" % (pid, tid)).splitlines():
        k, _, v = line.partition(":")
        out[k] = v.strip()
    return out


def fd_targets(pid):
    """{fd: what it points at} of a process."""
    d = "/proc/%d/fd" % pid
    out = {}
    for fd in os.listdir(d):
        try:
            out[int(fd)] = os.readlink(os.path.join(d, fd))
        except OSError:
            pass
    return out


def proc_limits(pid):
    """/proc/PID/limits: {name: [soft, hard]}."""
    out = {}
    for line in read_text("/proc/%d/limits" % pid).splitlines()[1:]:
        out[line[:26].strip()] = line[26:].split()[:2]
    return out


def proc_mounts(pid):
    """(mount point, per-mount options, fstype, super options) of each
    mount in pid's mount namespace, from the host."""
    out = []
    for line in read_text("/proc/%d/mountinfo" % pid).splitlines():
        pre, _, post = line.partition(" - ")
        f = pre.split()
        fstype, _src, sopts = post.split()[:3]
        out.append((f[4], f[5].split(","), fstype, sopts.split(",")))
    return out
