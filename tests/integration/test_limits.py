# SPDX-License-Identifier: MIT
"""Each limit hit for real (issue 2, sections 6, 7 and 10): memory, processes,
wall time (with escape attempts), disk, file size, output, CPU. Where the
binary has cgroups (cgroup v1 as root, a delegated cgroup v2 subtree for
anyone: conftest.cgroups_enforced()) the limits are cgroups, read from
outside in the version's own files; elsewhere they fall back to rlimits,
which the result says in its warnings, and an explicit CPU quota is
refused. Bounds on how promptly something ends scale with SLOW (the
emulated VM guest only)."""
import os
import re
import subprocess
import sys
import time

import pytest

import conftest
from conftest import (BACKEND, CLUSTER, CONTAINER, DEFAULT_FILE_SIZE, DEFAULT_OUTPUT_CAP,
                      EXIT_TIMEOUT, FORK_UNTIL_REFUSED, MIB, ROOT, SBX_BIN, SLOW, cgroup_version,
                      cgroups_enforced, clean_env, code, expected_cli_rc, find_marked, new_mark,
                      other_warnings, workspace_sized)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "mcp"))
import mcptest  # noqa: E402  (tests/mcp: the JSON-RPC client)
from test_pool import HOLD, release  # noqa: E402  (a run that lives until released)

MEMORY_FALLBACK = "memory limit enforced by a fallback: RLIMIT_AS"
PIDS_FALLBACK = "pids limit enforced by a fallback: RLIMIT_NPROC"

pytestmark = pytest.mark.contract


# --- memory -----------------------------------------------------------------

def assert_memory_ended(res):
    # Podman's OOMKilled names only pid 1 (the agent): the plugin reads the
    # container's cgroup (memory.events oom_kill) for the program's kill
    if cgroups_enforced():
        assert res["status"] == "oom", res
        assert res["limit"] == "memory", res
        assert res["exit_code"] == 137, res
        assert res["_run"].rc == 137, res["_run"]
        assert other_warnings(res) == [], res
    else:
        # no writable cgroup: RLIMIT_AS makes the allocation fail instead
        assert res["status"] == "error", res
        assert res["exit_code"] == 1, res
        assert "MemoryError" in res["stderr"], res
        assert any(w.startswith(MEMORY_FALLBACK) for w in res["warnings"]), res["warnings"]
        assert res["limit"] in (None, "memory"), res


def test_memory_bomb_default_limit():
    res = code("x = bytearray(2 * 1024**3)\nprint('survived', len(x))")
    assert "survived" not in res["stdout"]
    assert_memory_ended(res)


def test_memory_bomb_gradual_with_small_limit():
    res = code("x = []\nwhile True:\n    x.append(bytearray(1 << 20))", "--memory", "64M",
               "--timeout", "20")
    assert_memory_ended(res)
    assert res["duration_ms"] < 15000 * SLOW, res


def test_mcp_memory_ends_a_1gib_allocation():
    """MCP execute_code takes the CLI's controls in the CLI's units (issue
    17): with memory "128M" a 1 GiB allocation ends as --memory 128M ends it,
    where the default 512M would not stop it before it was made."""
    s = mcptest.Server(env=clean_env())
    try:
        s.initialize()
        r = s.call_tool("execute_code", {
            "code": "x = bytearray(1024**3)\nfor i in range(0, len(x), 4096): x[i] = 1\n"
                    "print('survived', len(x))",
            "memory": "128M", "timeout": 30}, timeout=120)
        res = r["result"]["structuredContent"]
        assert "survived" not in res["stdout"], res
        if cgroups_enforced():
            assert res["status"] == "oom" and res["limit"] == "memory", res
            assert res["exit_code"] == 137, res
        else:  # no writable cgroup: RLIMIT_AS makes the allocation fail instead
            assert res["status"] == "error" and "MemoryError" in res["stderr"], res
            assert any(w.startswith(MEMORY_FALLBACK) for w in res["warnings"]), res
    finally:
        assert s.finish(30) == 0, s.stderr.decode(errors="replace")


def test_memory_below_limit_is_fine():
    res = code("x = bytearray(100 * 1024**2)\nfor i in range(0, len(x), 4096): x[i] = 1\n"
               "print(sum(x[::4096]))")
    assert res["status"] == "ok", res
    assert res["stdout"] == "%d\n" % (100 * 1024 * 1024 // 4096)


def _watch(args, src, comm="python3", settle=None):
    """Start a run, find its sandboxed process from outside, call settle(pid)
    while it runs, then wait for the result (a HOLD program: released after
    settle, where a sleep of 1.5 s used to be waited out)."""
    mark = new_mark()
    p = subprocess.Popen([SBX_BIN, "run", "--json"] + list(args) + ["--code", src],
                         env=clean_env(mark_value=mark), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd="/")
    conftest._cli_pids.append(p.pid)
    try:
        pids = []
        deadline = time.monotonic() + 10 * SLOW
        while not pids and time.monotonic() < deadline and p.poll() is None:
            pids = find_marked(mark, comm)
            time.sleep(0.02)
        assert pids, "no %s process of the run was seen from outside" % comm
        value = settle(pids[0])
    finally:
        if pids and src is HOLD:
            release(pids[0])
        out, err = p.communicate(timeout=60)
    assert p.returncode == 0, (out, err)
    return value


def _limits(pid):
    out = {}
    with open("/proc/%d/limits" % pid) as f:
        for line in f.readlines()[1:]:
            name = line[:26].strip()
            out[name] = line[26:].split()[0]
    return out


def _cgroup_dir(pid, controller):
    """The directory of pid's cgroup that holds controller: its v1
    hierarchy's, or the one v2 directory."""
    with open("/proc/%d/cgroup" % pid) as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            if controller in ctrls.split(","):
                return "/sys/fs/cgroup/%s%s" % (ctrls, path)
            if cgroup_version() == 2 and ctrls == "":
                return "/sys/fs/cgroup%s" % path
    return None


def _read(d, name):
    with open(os.path.join(d, name)) as f:
        return f.read().strip()


def test_limits_seen_from_outside():
    """The running program's limits, read from /proc and cgroupfs on the host."""
    def settle(pid):
        lim = _limits(pid)
        assert lim["Max file size"] == str(8 * MIB), lim
        if cgroups_enforced():
            mem = _cgroup_dir(pid, "memory")
            # the core's group, or the one the container daemon (or the
            # kubelet) made
            assert "/kubepods/" in mem if CLUSTER else ("/docker/" in mem or "libpod" in mem) \
                if CONTAINER else "/llm-sandbox/p" in mem, mem
            if cgroup_version() == 2:
                assert int(_read(mem, "memory.max")) == 96 * MIB
                if os.path.exists(mem + "/memory.swap.max"):
                    assert _read(mem, "memory.swap.max") == "0", "swap counts against the limit"
                assert _read(mem, "pids.max") == "40"
                quota, period = _read(mem, "cpu.max").split()
                assert int(quota) * 1000 // int(period) == 1000, (quota, period)  # 1 core
                return True
            assert int(_read(mem, "memory.limit_in_bytes")) == 96 * MIB
            # a pod gets no swap: the kubelet's doing (cgroup v1: no memsw
            # limit; this node has no swap at all)
            if os.path.exists(mem + "/memory.memsw.limit_in_bytes") and not CLUSTER:
                assert int(_read(mem, "memory.memsw.limit_in_bytes")) == 96 * MIB, \
                    "swap counts against the limit"
            if CLUSTER:  # no pids field for a pod: the agent's RLIMIT_NPROC
                assert lim["Max processes"] == "40", lim
            else:
                assert _read(_cgroup_dir(pid, "pids"), "pids.max") == "40"
            cpu = _cgroup_dir(pid, "cpu")
            quota = int(_read(cpu, "cpu.cfs_quota_us"))
            period = int(_read(cpu, "cpu.cfs_period_us"))
            assert quota * 1000 // period == 1000, (quota, period)  # default: 1 core
        else:
            assert lim["Max address space"] == str(96 * MIB), lim
            assert lim["Max processes"] == "40", lim
        return True

    assert _watch(["--memory", "96M", "--pids", "40", "--file-size", "8M"], HOLD, settle=settle)


# --- processes ----------------------------------------------------------------

def test_pids_limit():
    res = code(FORK_UNTIL_REFUSED, "--pids", "32", "--timeout", "20")
    assert res["status"] == "error", res
    assert res["exit_code"] == 1, res
    n, errno_ = map(int, res["stdout"].split())
    assert errno_ == 11, res  # EAGAIN
    assert 1 <= n < 32, res
    if cgroups_enforced() and not CLUSTER:
        # containers: the API reports no pids events; the plugin reads the
        # container's pids.events from its cgroup on this host
        assert res["limit"] == "pids", res
    else:
        assert res["limit"] in (None, "pids"), res
        assert any(w.startswith(PIDS_FALLBACK) for w in res["warnings"]), res["warnings"]
    assert res["duration_ms"] < 10000 * SLOW, "the sleeping children were killed at once"


def test_fork_bomb_is_contained():
    res = code("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n"
               "        pass", "--timeout", "3")
    assert res["status"] in ("timeout", "error"), res
    assert res["limit"] in ("pids", "wall_time"), res
    assert res["_run"].rc == expected_cli_rc(res)
    assert res["_run"].wall < 3 + 5 * SLOW, \
        "the fork bomb was not killed promptly: %r" % res["_run"]
    # (the autouse fixture checks that no process of it is left)


# --- wall time ----------------------------------------------------------------

def assert_timed_out(res, timeout_s):
    assert res["status"] == "timeout", res
    assert res["limit"] == "wall_time", res
    assert res["exit_code"] == 137, res
    assert res["_run"].rc == EXIT_TIMEOUT, res["_run"]
    # Podman's service answers /info (the probe) and removes a killed
    # container more slowly (measured: 200-300 ms and 300-650 ms), so its
    # runs get one more second of slack; the others are held to one.
    slack_ms = (2000 if BACKEND == "podman" else 1000) * SLOW + conftest.START_SLACK_MS
    assert timeout_s * 1000 <= res["duration_ms"] < timeout_s * 1000 + slack_ms, res
    assert res["_run"].wall < timeout_s + 3 * SLOW, res["_run"]


def test_busy_loop_times_out():
    res = code("print('started', flush=True)\nwhile True: pass", "--timeout", "2")
    assert_timed_out(res, 2)
    assert res["stdout"] == "started\n", "output before the timeout is kept"


def test_timeout_text_mode_exit_124():
    r = conftest.run_cli(["run", "--timeout", "1", "--code",
                          "print('tick', flush=True)\nwhile True: pass"])
    assert r.rc == EXIT_TIMEOUT, r
    assert r.out == b"tick\n", r
    assert b"timeout (limit: wall_time)" in r.err, r


def test_sleep_times_out_fractional():
    res = code("import time\ntime.sleep(100)", "--timeout", "1.5")
    assert_timed_out(res, 1.5)


def test_timeout_setsid_double_fork_daemon():
    res = code("""
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(100)
        os._exit(0)
    os._exit(0)
time.sleep(100)
""", "--timeout", "2")
    assert_timed_out(res, 2)


def test_daemon_does_not_outlive_a_clean_exit():
    res = code("""
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.closerange(0, 3)
        time.sleep(100)
        os._exit(0)
    os._exit(0)
print('parent done')
""", "--timeout", "20")
    assert res["status"] == "ok", res
    assert res["stdout"] == "parent done\n"
    assert res["_run"].wall < 5 * SLOW, "the call waited for the daemon: %r" % res["_run"]


def test_nohup_background_sleep():
    res = code("import subprocess\n"
               "subprocess.run('nohup sleep 100 >/dev/null 2>&1 &', shell=True, check=True)\n"
               "print('launched')", "--timeout", "20")
    assert res["status"] == "ok", res
    assert res["stdout"] == "launched\n"
    assert res["_run"].wall < 5 * SLOW, res["_run"]


def test_child_ignoring_sigterm_is_killed_on_timeout():
    res = code("""
import os, signal, time
pid = os.fork()
if pid == 0:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        time.sleep(0.05)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
os.waitpid(pid, 0)
""", "--timeout", "2")
    assert_timed_out(res, 2)


def test_background_child_holding_stdout_does_not_block():
    res = code("""
import subprocess, sys
subprocess.Popen(['sh', '-c', 'sleep 100; echo late'])   # inherits stdout and stderr
print('main done', flush=True)
""", "--timeout", "20")
    assert res["status"] == "ok", res
    assert res["stdout"] == "main done\n", res
    assert res["_run"].wall < 5 * SLOW, \
        "the call waited on the child's open stdout: %r" % res["_run"]
    assert res["duration_ms"] < 5000 * SLOW, res


# --- disk ---------------------------------------------------------------------

FILL = """
import itertools, sys
d = %r
try:
    for i in itertools.count():
        with open(f"{d}/fill{i}", "wb") as f:
            for _ in range(%d):
                f.write(b"x" * (1 << 20))
except OSError as e:
    print("errno", e.errno)
    sys.exit(1)
"""


def assert_workspace_refused(res):
    """A backend that cannot size the workspace refuses a request for a
    size, naming the control (MXC: its tmpfs have none)."""
    assert res["status"] == "refused", res
    assert "cannot enforce workspace" in res["message"], res


@pytest.mark.parametrize("where", ["/workspace", "/tmp", "/dev/shm"])
def test_disk_fill(where):
    res = code(FILL % (where, 4), "--workspace", "16M", "--timeout", "20")
    if not workspace_sized():
        assert_workspace_refused(res)
        return
    assert res["status"] == "error", res
    assert res["limit"] == "workspace", res
    assert res["stdout"] == "errno 28\n", res  # ENOSPC
    assert res["exit_code"] == 1


def test_disk_fill_with_default_limits():
    """Filling the workspace with files each below the file-size limit, with
    every other limit at its default, ends as a full workspace (not as
    anything else: the program itself uses little memory). A backend whose
    tmpfs have no size (MXC): as root the memory cgroup, which their pages
    count against, ends it; unprivileged nothing would, short of the host's
    memory, so it is not tried."""
    if not workspace_sized():
        if not ROOT:
            pytest.skip("%s's tmpfs have no size and no cgroup bounds them here" % BACKEND)
        res = code(FILL % ("/workspace", 100), "--timeout", "30")
        assert res["status"] == "oom" and res["limit"] == "memory", res
        return
    res = code(FILL % ("/workspace", 100), "--timeout", "30")
    assert res["status"] == "error" and res["limit"] == "workspace", (
        "default workspace fill ended as status %r limit %r (exit %r)"
        % (res["status"], res["limit"], res["exit_code"]))
    assert res["stdout"] == "errno 28\n", res


def test_file_size_limit():
    res = code("import sys\ntry:\n    open('/workspace/big', 'wb').write(b'x' * (2 << 20))\n"
               "except OSError as e:\n    print('errno', e.errno)\n    sys.exit(1)",
               "--file-size", "1M")
    assert res["status"] == "error", res
    assert res["limit"] == "file_size", res
    assert res["stdout"] == "errno 27\n", res  # EFBIG


def test_file_size_limit_default():
    res = code("import sys\nf = open('/tmp/big', 'wb')\ntry:\n"
               "    for _ in range(300): f.write(b'x' * (1 << 20))\n"
               "except OSError as e:\n    print('errno', e.errno, f.tell())\n    sys.exit(1)",
               "--timeout", "30")
    assert res["status"] == "error", res
    assert res["limit"] == "file_size", res
    errno_, size = map(int, res["stdout"].split()[1:])
    assert errno_ == 27 and size <= DEFAULT_FILE_SIZE, res


def test_files_under_limits_are_fine():
    sized = ("--workspace", "16M") if workspace_sized() else ()
    res = code("import os\nfor i in range(3):\n    open(f'/workspace/f{i}', 'wb').write(b'x' * "
               "(2 << 20))\nprint(sum(os.path.getsize(f'/workspace/f{i}') for i in range(3)))",
               "--file-size", "4M", *sized)
    assert res["status"] == "ok", res
    assert res["stdout"] == "%d\n" % (6 << 20)


# --- output -------------------------------------------------------------------

def test_output_flood_is_truncated_and_counted():
    res = code("import sys\nsys.stdout.write('x' * 5_000_000)\nsys.stdout.flush()\n"
               "print('still running', file=sys.stderr)", "--timeout", "30")
    assert res["status"] == "ok", {k: v for k, v in res.items() if k != "stdout"}
    assert res["exit_code"] == 0 and res["limit"] is None
    assert res["stdout_truncated"] is True
    assert res["stdout_bytes"] >= 5_000_000
    assert res["stdout_bytes"] == 5_000_000
    assert len(res["stdout"]) == DEFAULT_OUTPUT_CAP == 1048576
    assert set(res["stdout"]) == {"x"}
    # the program kept running after the cap: it printed to stderr afterwards
    assert res["stderr"] == "still running\n"
    assert res["stderr_truncated"] is False


def test_output_cap_option_both_streams():
    res = code("import sys\nsys.stdout.write('o' * 5_000_000)\nsys.stdout.flush()\n"
               "sys.stderr.write('e' * 3000)\nsys.stderr.flush()\nprint('x' * 10)",
               "--output-bytes", "1000")
    assert res["status"] == "ok", res
    assert res["stdout"] == "o" * 1000
    assert res["stdout_truncated"] is True and res["stdout_bytes"] == 5_000_000 + 11
    assert res["stderr"] == "e" * 1000
    assert res["stderr_truncated"] is True and res["stderr_bytes"] == 3000


def test_output_exactly_at_cap_is_not_truncated():
    res = code("import sys\nsys.stdout.write('y' * 1000)", "--output-bytes", "1000")
    assert res["status"] == "ok", res
    assert res["stdout"] == "y" * 1000 and res["stdout_bytes"] == 1000
    assert res["stdout_truncated"] is False


def test_output_flood_text_mode_reports_truncation():
    r = conftest.run_cli(
        ["run", "--output-bytes", "1000", "--code",
         "import sys\nsys.stdout.write('z' * 100000)"])
    assert r.rc == 0, r
    assert r.out == b"z" * 1000, r.out[:100]
    assert b"stdout truncated (100000 bytes produced)" in r.err, r.err


def test_endless_output_then_timeout():
    res = code("while True: print('x' * 1000)", "--timeout", "2")
    assert res["status"] == "timeout", {k: v for k, v in res.items() if k != "stdout"}
    assert res["stdout_truncated"] is True
    assert res["stdout_bytes"] > DEFAULT_OUTPUT_CAP
    assert len(res["stdout"]) == DEFAULT_OUTPUT_CAP


# --- CPU ----------------------------------------------------------------------

CPU_RATIO = """
import os, time
t0 = time.monotonic()
kids = []
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        while time.monotonic() - t0 < 1.5:
            pass
        os._exit(0)
    kids.append(pid)
for k in kids:
    os.waitpid(k, 0)
t = os.times()
print(round((t.children_user + t.children_system) / (time.monotonic() - t0), 2))
"""


def test_cpu_quota():
    if cgroups_enforced():
        res = code(CPU_RATIO, "--cpus", "0.5")
        assert res["status"] == "ok", res
        assert float(res["stdout"]) <= 0.65, "two busy processes under --cpus 0.5 used %s cores" \
            % res["stdout"].strip()
        res = code(CPU_RATIO)
        assert res["status"] == "ok", res
        assert float(res["stdout"]) <= 1.2, "default quota is 1 core; used %s" \
            % res["stdout"].strip()
    else:
        res = code("print(1)", "--cpus", "0.5")
        assert res["status"] == "refused", res
        assert res["_run"].rc == 125
        assert "cpu" in res["message"] and "cannot enforce" in res["message"], res["message"]
        assert res["stdout"] == "", "nothing ran"
        # the default quota is not enforceable either, but only warns
        res = code("print(2)")
        assert res["status"] == "ok" and res["stdout"] == "2\n", res
        assert any(re.match(r"cpu limit not enforced", w) for w in res["warnings"]), res


def test_no_process_survives_the_return():
    """When the CLI returns after a timeout, the sandbox's whole tree is
    already gone: checked at once, without the autouse fixture's grace."""
    before = conftest.process_snapshot()
    res = code("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n"
               "        pass", "--timeout", "2")
    left = conftest.leftover_processes(before)
    assert res["status"] in ("timeout", "error"), res
    assert not left, "%d processes of the run were still there when the CLI returned: %s" % (
        len(left), ", ".join("%d %s (state %s)" % (p[0], p[1], p[3]) for p in left[:8]))
