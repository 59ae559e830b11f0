# SPDX-License-Identifier: MIT
"""The WSL2 backend (plugins/wsl2) through its own code, with wsl.exe's
stand-in (tests/wsl2/wsl_shim.c) as launcher: the command line it sends
(no shell: wsl.exe -d DISTRO -u USER --cd / --exec OPENER bwrap), only
stdin, stdout and stderr crossing (the opener's stream), the environment
carried across with none of WSL's interop variables, AF_VSOCK refused by
our filter, the probe's answer to each wrong setting, and the report that
marks the backend experimental and its enforcement on Windows unverified.
Runs when SBX_TEST_BACKEND=wsl2 (ctest integration.wsl2), beside the part
of the contract suite wsl2-ci.list names; the other backends skip it."""
import errno
import os
import shutil
import subprocess
import tempfile
import time

import pytest

import conftest
from conftest import (BASE_ENV, PYTHON_ENV, SBX_BIN, WSL2, WSL2_ENV, WSL2_OPENER, WSL2_SHIM,
                      backend_controls,
                      clean_env, code, find_marked, launcher_above, new_mark, plugin_entry,
                      plugins_json, proc_environ, run_cli)

pytestmark = [pytest.mark.wsl2,
              pytest.mark.skipif(not WSL2, reason="the wsl2 backend's own checks")]

SHIM = WSL2_SHIM
DISTRO = WSL2_ENV["LLM_SANDBOX_WSL2_DISTRO"]
USER = WSL2_ENV["LLM_SANDBOX_WSL2_USER"]
OPENER = WSL2_ENV["LLM_SANDBOX_WSL2_OPENER"]
BWRAP = "/usr/bin/bwrap"
# Through the stand-in (here), or the real wsl.exe (on Windows: the checks
# of the stand-in's own listing and refusals are then skipped).
WITH_SHIM = WSL2_ENV["LLM_SANDBOX_WSL2_LAUNCHER"] == WSL2_SHIM
needs_shim = pytest.mark.skipif(not WITH_SHIM, reason="checks wsl.exe's stand-in and its listing")


def test_vsock_is_refused_by_our_filter():
    """WSL2's way to the Windows host is AF_VSOCK (interop, Docker Desktop,
    the Plan 9 server): our seccomp filter refuses the socket family, and
    the program sees exactly that errno; AF_UNIX still works, so the
    refusal is the filter's and not a broken socket()."""
    res = code("import socket\n"
               "socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()\n"
               "for t in (socket.SOCK_STREAM, socket.SOCK_DGRAM):\n"
               "    try:\n"
               "        socket.socket(socket.AF_VSOCK, t)\n"
               "        print('opened')\n"
               "    except OSError as e:\n"
               "        print(e.errno)\n", "--backend", "wsl2")
    assert res["status"] == "ok" and res["backend"] == "wsl2", res
    assert res["stdout"] == "%d\n%d\n" % (errno.EAFNOSUPPORT, errno.EAFNOSUPPORT), res


def running_python(seconds, extra_env=None):
    """A Python run that sleeps for seconds, started through the CLI, and
    its program's host pid once it is seen running in its workspace, and
    the run's mark. The caller ends it with p.communicate()."""
    mark = new_mark()
    src = "open('.ready', 'w').close()\nimport time\ntime.sleep(%d)\n" % seconds
    p = subprocess.Popen([SBX_BIN, "run", "--json", "--timeout", "20", "--code", src],
                         env=dict(clean_env(mark_value=mark), **(extra_env or {})),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, cwd="/")
    conftest._cli_pids.append(p.pid)
    prog, deadline = None, time.monotonic() + 20
    while prog is None and time.monotonic() < deadline and p.poll() is None:
        found = find_marked(mark, "python3")
        if found and os.path.exists("/proc/%d/cwd/.ready" % found[0]):
            prog = found[0]
        else:
            time.sleep(0.02)
    if prog is None:
        p.kill()
        p.communicate(timeout=60)
    assert prog, "the program was not seen running"
    return p, prog, mark


def test_launched_through_wsl_exe_without_a_shell():
    """From the host while a run lives: the process the CLI started is the
    launcher that became the opener, bwrap's parent (the stand-in execs only
    bwrap or the opener, and only after checking -d, -u, --cd / and
    --exec), given no descriptor (no --info-fd), in the environment a WSL
    session starts with (WSL_INTEROP and all: wsl.exe carries none of
    ours), while the program inside has exactly the documented environment,
    which bwrap was given as --clearenv and --setenv."""
    p, prog, mark = running_python(2)
    try:
        launched = launcher_above(prog)
        with open("/proc/%d/cmdline" % launched, "rb") as f:
            argv = f.read().split(b"\0")[:-1]
        outer = proc_environ(launched)
        inner = proc_environ(prog)
    finally:
        out, _ = p.communicate(timeout=60)
    assert b'"status":"ok"' in out, out
    assert argv[0] == b"wsl2-open" and argv[1] == b"/usr/bin/bwrap", argv
    assert argv[2] == b"--unshare-user" and b"--info-fd" not in argv, argv
    assert argv.count(b"--clearenv") == 1 and argv[-1] == b"/.sbx/agent", argv
    setenv = {argv[i + 1].decode(): argv[i + 2].decode()
              for i, a in enumerate(argv) if a == b"--setenv"}
    assert not [k for k in setenv if k.startswith("WSL")], setenv
    assert setenv["PATH"] == "/usr/bin:/bin", setenv
    # the launcher's own environment is WSL's, not the sandbox's
    assert outer is not None and "WSL_INTEROP=/run/WSL/1_interop" in outer, outer
    assert "WSL_DISTRO_NAME=%s" % DISTRO in outer, outer
    want = dict(BASE_ENV, **PYTHON_ENV)
    want[conftest.MARK_KEY] = mark
    got = dict(e.split("=", 1) for e in inner)
    assert got == want, got


@pytest.mark.parametrize("args", [
    ["-d", DISTRO, "-u", USER, "--cd", "/", "--exec", "/bin/sh", "-c", "id"],
    ["-d", DISTRO, "-u", USER, "--cd", "/", "--exec", "/usr/bin/env", "bwrap"],
    ["-d", DISTRO, "-u", USER, "--exec", "/usr/bin/bwrap", "--version", "x"],
    ["-d", DISTRO, "-u", "root", "--cd", "/", "--exec", "/usr/bin/bwrap", "--version"],
    ["-d", "legacy-wsl1", "-u", USER, "--cd", "/", "--exec", "/usr/bin/bwrap", "--version"],
    ["-u", USER, "-d", DISTRO, "--cd", "/", "--exec", "/usr/bin/bwrap", "--version"],
    ["-d", DISTRO, "-u", USER, "--cd", "/", "-e", "/usr/bin/bwrap", "--version"],
    ["-l"],
    ["-d", DISTRO, "-u", USER, "--cd", "/", "--exec", "/usr/bin/bwrap", "--unshare-user",
     "--seccomp", "3", "--", "/bin/true"],
    ["-d", DISTRO, "-u", USER, "--cd", "/", "--exec", WSL2_OPENER, "/bin/sh", "-c", "id"],
], ids=["shell", "env", "no-cd", "root", "wsl1", "order", "dash-e", "list", "bwrap-direct",
        "opener-not-bwrap"])
@needs_shim
def test_stand_in_refuses_what_the_plugin_must_not_send(args):
    """The stand-in is strict, so that the contract suite passing through
    it means the plugin sent exactly the command line above."""
    p = subprocess.run([SHIM] + args, capture_output=True, timeout=30, env={})
    assert p.returncode == 2 and b"wsl-shim: refused" in p.stderr, p
    ok = subprocess.run([SHIM, "-d", DISTRO, "-u", USER, "--cd", "/", "--exec",
                         "/usr/bin/bwrap", "--version"], capture_output=True, timeout=30, env={})
    assert ok.returncode == 0 and ok.stdout.startswith(b"bubblewrap "), ok


def probe_error(**settings):
    env = {"LLM_SANDBOX_WSL2_" + k.upper(): v for k, v in settings.items()}
    entry = plugin_entry(plugins_json(extra_env=env), "wsl2")
    assert entry["status"] == "unusable" and entry["probe"] == "failed", entry
    return entry["probe_error"]


@pytest.mark.parametrize("settings,says", [
    ({"distro": None}, "set LLM_SANDBOX_WSL2_DISTRO"),
    ({"user": None}, "set LLM_SANDBOX_WSL2_USER"),
    ({"user": "root"}, "set LLM_SANDBOX_WSL2_USER to an unprivileged user"),
    ({"distro": "Ubuntu"}, "'Ubuntu' is not installed (wsl.exe -l -q lists: Debian, "
                           "sbx-wsl2-test, legacy-wsl1); install it"),
    ({"distro": "legacy-wsl1"}, "is WSL version 1, which has no Linux kernel of its own: "
                                "convert it with 'wsl --set-version legacy-wsl1 2'"),
    ({"user": "other"}, "(wsl -d sbx-wsl2-test -u root --exec apt-get install -y bubblewrap)"),
    ({"bwrap": "/nonexistent/bwrap"}, "no bwrap at /nonexistent/bwrap in WSL distribution"),
    ({"launcher": "/nonexistent/wsl.exe"}, "WSL launcher '/nonexistent/wsl.exe' not found"),
    ({"launcher": "wsl.exe"}, "set LLM_SANDBOX_WSL2_LAUNCHER to wsl.exe's path"),
    ({"opener": "/nonexistent/wsl2-open"},
     "no llm-sandbox WSL2 opener at /nonexistent/wsl2-open in WSL distribution"),
    ({"opener": "wsl2-open"}, "set LLM_SANDBOX_WSL2_OPENER to wsl2-open's absolute path"),
], ids=["no-distro", "no-user", "root", "not-listed", "wsl1", "user-refused", "no-bwrap",
        "no-launcher", "default-launcher", "no-opener", "relative-opener"])
@needs_shim
def test_each_probe_failure_says_what_to_do(settings, says):
    """Each wrong setting is found by the probe, through the launcher, and
    the message names the fix (the listing read from UTF-16LE)."""
    assert says in probe_error(**settings)


def test_report_marks_it_experimental_and_unverified():
    """plugins --json and doctor: experimental, enforcement on Windows
    unverified, in the description and the controls that depend on it."""
    entry = plugin_entry(plugins_json(), "wsl2")
    assert entry["status"] == "ok", entry
    assert "experimental" in entry["description"], entry
    assert "unverified" in entry["description"], entry
    ctl = backend_controls()
    for name in ("seccomp", "read_only_system", "unprivileged"):
        assert ctl[name]["level"] == "full", (name, ctl[name])
        assert "unverified on Windows" in ctl[name]["note"], (name, ctl[name])
    # pasta cannot join a namespace inside the distribution from here
    assert ctl["network_on"]["level"] == "none", ctl["network_on"]
    assert "sbx-wsl2-test" in ctl["no_new_privs"]["note"], ctl["no_new_privs"]
    r = run_cli(["doctor"], mark=False)
    line = [l for l in r.out.decode().splitlines() + r.err.decode().splitlines()
            if "plugin:wsl2" in l]
    assert line and "experimental" in line[0], (line, r)


def opened(stream, *bwrap_args, pass_fds=()):
    """The opener through the launcher, as the plugin runs it, with stream
    on stdin; bwrap binds / read-only and a tmpfs on /run."""
    argv = [WSL2_ENV["LLM_SANDBOX_WSL2_LAUNCHER"], "-d", DISTRO, "-u", USER, "--cd", "/",
            "--exec", OPENER, BWRAP, "--ro-bind", "/", "/", "--tmpfs", "/run"] + list(bwrap_args)
    return subprocess.run(argv, input=stream, capture_output=True, timeout=60, env={},
                          pass_fds=pass_fds)


def record(kind, fd, payload=b""):
    return bytes([kind, fd]) + len(payload).to_bytes(4, "little") + payload


MAGIC = b"SBXWSL2\n"
END = record(ord("E"), 0)


def test_blobs_cross_on_stdin_and_the_channel_follows():
    """Only stdin, stdout and stderr cross wsl.exe: a blob sent in the
    opener's stream is at the descriptor bwrap was told (--ro-bind-data 3),
    and every byte after the end record is the program's own stdin, none
    taken by the opener."""
    p = opened(MAGIC + record(ord("F"), 3, b"seccomp and agent stand here") + END + b"channel",
               "--ro-bind-data", "3", "/run/blob", "--", "/bin/cat", "/run/blob", "-")
    assert p.returncode == 0 and p.stdout == b"seccomp and agent stand herechannel", p


@needs_shim
def test_a_descriptor_of_the_caller_does_not_cross():
    """The stand-in closes every descriptor above 2, as wsl.exe carries
    none: bwrap told to read the caller's open fd finds nothing there (a
    regression to passing descriptors fails here as it would on Windows)."""
    r, w = os.pipe()
    try:
        os.write(w, b"from the host")
        os.close(w)
        p = opened(MAGIC + END, "--ro-bind-data", str(r), "/run/blob", "--", "/bin/cat",
                   "/run/blob", pass_fds=(r,))
    finally:
        os.close(r)
    assert p.returncode != 0 and b"from the host" not in p.stdout, p
    assert b"Bad file descriptor" in p.stderr, p


@pytest.mark.parametrize("stream,says", [
    (b"", b"stdin ended before the stream"),
    (b"#!/bin/sh\nid\n", b"bad magic"),
    (MAGIC + record(ord("F"), 2, b"x") + END, b"descriptor outside 3..15"),
    (MAGIC + record(ord("F"), 3, b"x") + record(ord("F"), 3, b"y") + END,
     b"descriptor given twice"),
    (MAGIC + bytes([ord("F"), 3]) + (65 << 20).to_bytes(4, "little"),
     b"blob larger than 64 MiB"),
    (MAGIC + record(ord("F"), 3, b"short")[:-2], b"stdin ended inside a blob"),
    (MAGIC + record(ord("F"), 3, b"x"), b"stdin ended inside the stream"),
], ids=["empty", "script", "fd-2", "twice", "too-large", "short-blob", "no-end"])
def test_the_opener_refuses_a_bad_stream(stream, says):
    """The opener parses bytes that crossed a trust boundary: anything but
    a well-formed stream ends it with status 125 and its reason, before
    bwrap runs."""
    p = opened(stream, "--", "/bin/echo", "bwrap ran")
    assert p.returncode == 125 and b"bwrap ran" not in p.stdout, p
    assert p.stderr.startswith(b"wsl2-open: ") and says in p.stderr, p


# --- limits: the distribution's cgroup, made by the opener, or rlimits ------
#
# The limits are enforced where the sandbox runs, inside the distribution:
# the opener makes the box's cgroup there with the core's cgroup code when
# the distribution lets USER write one, else the agent's rlimits hold them,
# and the report says which. Never the core's cgroup here on the host, which
# on Windows holds nothing of the box. Under the stand-in the distribution
# is this machine and USER the box's own uid: the per-box uids (as root) and
# nobody may write no cgroup here, so both lanes see the fallback; the
# stand-in starts USER's processes in /sys/fs/cgroup/H/DISTRO when the
# machine delegated one to USER (delegated_cgroup below, as root), as a WSL
# distribution with a delegated cgroup would.

ROOT = conftest.ROOT
HIERARCHIES = ("memory", "pids", "cpu")


def limits(memory, pids, cpu=1000):
    return record(ord("L"), 0, memory.to_bytes(8, "little") + cpu.to_bytes(8, "little")
                  + pids.to_bytes(8, "little"))


def stats_of(stderr):
    """The opener's last line: {"oom_killed": N, "pids_limited": N}."""
    lines = [l for l in stderr.decode().splitlines() if l.startswith("sbx-wsl2-stats ")]
    assert lines, stderr
    return {k: int(v) for k, v in (w.split("=") for w in lines[-1].split()[1:])}


def cgroup_v1():
    return os.path.isdir("/sys/fs/cgroup/memory") and os.path.isdir("/sys/fs/cgroup/pids")


def groups_of_openers():
    """The opener-made groups left in this process's memory cgroup."""
    with open("/proc/self/cgroup") as f:
        mem = [l.split(":", 2)[2].strip() for l in f if ":memory:" in l]
    parent = "/sys/fs/cgroup/memory%s/llm-sandbox" % mem[0].rstrip("/") if mem else ""
    return [] if not os.path.isdir(parent) else [
        d for d in os.listdir(parent) if os.path.isdir(os.path.join(parent, d))]


def test_limits_are_reported_as_the_distribution_holds_them():
    """plugins --json: memory, CPU and pids as the opener found them in the
    distribution, in the core's own words and naming the distribution;
    here, for the boxes' users, the rlimit fallbacks (no cgroup they may
    write), never the core's own cgroup on the host. A run carries the
    fallback's warning, and the fallback holds: RLIMIT_AS makes the
    allocation fail (MemoryError), no OOM kill."""
    ctl = backend_controls()
    for c in ("memory", "cpu", "pids"):
        assert ctl[c]["note"].endswith(" in '%s'" % DISTRO), (c, ctl[c])
    assert ctl["memory"]["level"] == "fallback", ctl["memory"]
    assert "RLIMIT_AS per process (no writable cgroup" in ctl["memory"]["note"], ctl["memory"]
    assert ctl["pids"]["level"] == "fallback", ctl["pids"]
    assert "RLIMIT_NPROC per uid" in ctl["pids"]["note"], ctl["pids"]
    assert ctl["cpu"]["level"] == "none", ctl["cpu"]
    res = code("try:\n    x = bytearray(256 << 20)\n    print('survived')\n"
               "except MemoryError:\n    print('refused')\n", "--memory", "64M")
    assert res["status"] == "ok" and res["stdout"] == "refused\n", res
    assert any(w.startswith("memory limit enforced by a fallback: RLIMIT_AS per process")
               and w.endswith(" in '%s'" % DISTRO) for w in res["warnings"]), res["warnings"]


def test_opener_caps_speak_for_its_user():
    """wsl2-open --caps, through the launcher as the caller: as root the
    cgroup service finds v1 (or v2) writable; unprivileged, the fallback
    and why, in the core's words (core/src/host/cgroup.c)."""
    p = subprocess.run([WSL2_ENV["LLM_SANDBOX_WSL2_LAUNCHER"], "-d", DISTRO, "-u", USER, "--cd",
                        "/", "--exec", OPENER, "--caps"], capture_output=True, timeout=30, env={})
    assert p.returncode == 0, p
    caps = {l.split()[1]: l.split(" ", 3)[2:] for l in p.stdout.decode().splitlines()}
    assert set(caps) == {"memory", "cpu", "pids"}, p.stdout
    if ROOT:
        assert [caps[c][0] for c in ("memory", "cpu", "pids")] == ["full"] * 3, caps
        assert caps["pids"][1].startswith("cgroup v"), caps
    else:
        assert caps["memory"][0] == "fallback" and caps["memory"][1].startswith("RLIMIT_AS"), caps
        assert caps["cpu"][0] == "none" and "writable cgroup" in caps["cpu"][1], caps


@pytest.mark.skipif(ROOT, reason="as root the opener may write the cgroup")
def test_opener_refuses_limits_it_cannot_enforce():
    """Fail closed: a stream that asks for the cgroup (the host counted on
    one) when the distribution gives USER none ends the box before bwrap
    runs, and says why."""
    p = opened(MAGIC + limits(64 << 20, 16) + END, "--", "/bin/echo", "bwrap ran")
    assert p.returncode == 125 and b"bwrap ran" not in p.stdout, p
    assert b"wsl2-open: limits asked for, but no cgroup in the distribution" in p.stderr, p


needs_root_v1 = pytest.mark.skipif(not ROOT or not cgroup_v1(),
                                   reason="the opener writes cgroup v1 here only as root")


@needs_root_v1
def test_opener_cgroup_holds_the_box_and_goes():
    """As root the distribution (this machine) lets the opener write cgroup
    v1: bwrap and what it starts are in the box's group (a child of
    llm-sandbox under the opener's own cgroup, named after the opener), its
    limits are the stream's, and it is gone when the opener exits."""
    before = groups_of_openers()
    p = opened(MAGIC + limits(96 << 20, 40, 500) + END, "--", "/bin/sh", "-c",
               "cat /proc/self/cgroup; d=/sys/fs/cgroup; g=$(sed -n 's/^[0-9]*:memory://p' "
               "/proc/self/cgroup); cat $d/memory$g/memory.limit_in_bytes "
               "$d/pids$(sed -n 's/^[0-9]*:pids://p' /proc/self/cgroup)/pids.max "
               "$d/cpu$(sed -n 's/^[0-9]*:cpu://p' /proc/self/cgroup)/cpu.cfs_quota_us")
    assert p.returncode == 0, p
    out = p.stdout.decode().splitlines()
    mem = [l.split(":", 2)[2] for l in out if ":memory:" in l]
    assert mem and "/llm-sandbox/p" in mem[0] and mem[0].endswith("-1"), out
    assert out[-3:] == [str(96 << 20), "40", "50000"], out
    assert stats_of(p.stderr) == {"oom_killed": 0, "pids_limited": 0}, p.stderr
    assert groups_of_openers() == before, "the box's cgroup was left behind"


@needs_root_v1
def test_opener_cgroup_stats_line_after_an_unfinished_line():
    """The box shares the opener's stderr: a line the box leaves without
    its newline (a process killed mid-message) does not swallow the
    opener's stats line, which begins a line of its own."""
    p = opened(MAGIC + limits(96 << 20, 40) + END, "--", "/bin/sh", "-c",
               "printf 'half a line' >&2")
    assert p.returncode == 0, p
    assert b"half a line" in p.stderr, p.stderr
    assert stats_of(p.stderr) == {"oom_killed": 0, "pids_limited": 0}, p.stderr


@needs_root_v1
def test_opener_cgroup_ooms_past_the_memory_limit():
    """Past the limit the kernel's OOM killer ends the program (SIGKILL),
    not a failed allocation (no RLIMIT_AS here), and the opener reports
    the OOM kill to the host."""
    p = opened(MAGIC + limits(48 << 20, 40) + END, "--", "/usr/bin/python3", "-c",
               "x = bytearray(256 << 20)\nfor i in range(0, len(x), 4096): x[i] = 1\n"
               "print('survived')")
    assert p.returncode in (137, 128 + 9) and b"survived" not in p.stdout, p
    assert b"MemoryError" not in p.stderr, p
    assert stats_of(p.stderr)["oom_killed"] == 1, p.stderr


@needs_root_v1
def test_opener_cgroup_limits_processes():
    """pids.max of the box's group refuses the fork past it (EAGAIN), and
    the opener reports it."""
    p = opened(MAGIC + limits(96 << 20, 12) + END, "--", "/usr/bin/python3", "-c",
               "import os, time\nn = 0\ntry:\n    while n < 100:\n"
               "        if os.fork() == 0:\n            time.sleep(3)\n            os._exit(0)\n"
               "        n += 1\nexcept OSError as e:\n    print('refused', n, e.errno)\n")
    assert p.returncode == 0 and p.stdout.startswith(b"refused "), p
    n, err = p.stdout.split()[1:3]
    assert int(n) < 12 and int(err) == errno.EAGAIN, p.stdout
    assert stats_of(p.stderr)["pids_limited"] == 1, p.stderr


@needs_root_v1
def test_sigterm_kills_the_whole_cgroup():
    """SIGTERM to the launcher (the host's kill on timeout) reaches every
    process of the box through its cgroup, even one that left bwrap's
    process tree (a daemon, without a pid namespace here): none is left,
    and neither is the group."""
    before = groups_of_openers()
    argv = [WSL2_ENV["LLM_SANDBOX_WSL2_LAUNCHER"], "-d", DISTRO, "-u", USER, "--cd", "/",
            "--exec", OPENER, BWRAP, "--ro-bind", "/", "/", "--tmpfs", "/run", "--",
            "/bin/sh", "-c", "setsid /bin/sleep 300 & echo $!; exec /bin/sleep 300"]
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env={})
    p.stdin.write(MAGIC + limits(96 << 20, 40) + END)
    p.stdin.close()
    daemon = int(p.stdout.readline())
    p.terminate()
    p.wait(timeout=30)
    err = p.stderr.read()
    p.stdout.close()
    p.stderr.close()
    assert p.returncode != 0, err
    assert stats_of(err) == {"oom_killed": 0, "pids_limited": 0}, err
    deadline = time.monotonic() + 10
    while os.path.exists("/proc/%d" % daemon) and time.monotonic() < deadline:
        with open("/proc/%d/stat" % daemon) as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                break
        time.sleep(0.05)
    alive = os.path.exists("/proc/%d" % daemon)
    if alive:
        with open("/proc/%d/stat" % daemon) as f:
            alive = f.read().rsplit(")", 1)[1].split()[0] != "Z"
    assert not alive, "the daemon outside bwrap's tree survived"
    assert groups_of_openers() == before, "the box's cgroup was left behind"


@pytest.fixture
def delegated_cgroup():
    """As root: a cgroup of the stand-in distribution delegated to USER, as
    systemd's Delegate=yes hands one to a user in a WSL distribution that
    runs it: /sys/fs/cgroup/H/sbx-wsl2-test owned by the sandbox uid, every
    box that uid (LLM_SANDBOX_UID_RANGE=off). The stand-in starts USER's
    processes in it; removed afterwards, with whatever the opener left."""
    # The stand-in and the opener start as the box's uid, which may not
    # reach them in the build tree (a checkout under /root is 0700): the
    # ones under test go to a directory every user may read.
    stage = tempfile.mkdtemp(prefix="sbx-wsl2-bin-")
    os.chmod(stage, 0o755)
    for f in (WSL2_SHIM, WSL2_OPENER):
        shutil.copy(f, stage)
        os.chmod(os.path.join(stage, os.path.basename(f)), 0o755)
    made = []
    for h in HIERARCHIES:
        d = "/sys/fs/cgroup/%s/%s" % (h, DISTRO)
        os.makedirs(d, exist_ok=True)
        made.append(d)
        for f in ("", "cgroup.procs", "tasks"):
            os.chown(os.path.join(d, f), conftest.SANDBOX_UID, conftest.SANDBOX_GID)
    yield {"LLM_SANDBOX_UID_RANGE": "off",
           "LLM_SANDBOX_WSL2_LAUNCHER": os.path.join(stage, os.path.basename(WSL2_SHIM)),
           "LLM_SANDBOX_WSL2_OPENER": os.path.join(stage, os.path.basename(WSL2_OPENER))}
    shutil.rmtree(stage)
    for d in made:
        for top, dirs, _ in sorted(os.walk(d), key=lambda w: -w[0].count("/")):
            try:
                os.rmdir(top)
            except OSError:
                pass
    assert not [d for d in made if os.path.exists(d)], "a cgroup of the test was left"


@needs_root_v1
def test_through_the_core_the_distribution_cgroup_holds_the_limits(delegated_cgroup):
    """The whole path: the probe finds the delegated cgroup (--caps as the
    box's user), reports memory, CPU and pids as cgroup v1 in the
    distribution; a run's program lives in the box's group under it (from
    outside: its /proc/PID/cgroup), not in the core's; past --memory the
    OOM killer ends it and the result says so (status oom, limit memory:
    the opener's report crossed back); past --pids, forks fail."""
    env = delegated_cgroup
    entry = plugin_entry(plugins_json(extra_env=env), "wsl2")
    assert entry["probe"] == "ok", entry
    for c in ("memory", "cpu", "pids"):
        ctl = entry["controls"][c]
        assert ctl["level"] == "full" and ctl["note"].startswith("cgroup v1 ") and \
            ctl["note"].endswith(" in '%s'" % DISTRO), (c, ctl)
    p, prog, _ = running_python(2, env)
    try:
        with open("/proc/%d/cgroup" % prog) as f:
            groups = {l.split(":")[1]: l.split(":", 2)[2].strip() for l in f}
    finally:
        out, _ = p.communicate(timeout=60)
    assert b'"status":"ok"' in out and b"limit enforced by a fallback" not in out, out
    for h in HIERARCHIES:
        assert groups[h].startswith("/%s/llm-sandbox/p" % DISTRO), (h, groups)
    res = code("x = bytearray(256 << 20)\nfor i in range(0, len(x), 4096): x[i] = 1\n"
               "print('survived')", "--memory", "64M", extra_env=env)
    assert res["status"] == "oom" and res["limit"] == "memory", res
    assert res["exit_code"] == 137 and "survived" not in res["stdout"], res
    assert not [w for w in res["warnings"] if "fallback" in w], res
    res = code("import os, time\nn = 0\ntry:\n    while n < 100:\n"
               "        if os.fork() == 0:\n            time.sleep(3)\n            os._exit(0)\n"
               "        n += 1\nexcept OSError as e:\n    print('refused', n)\n",
               "--pids", "16", extra_env=env)
    assert res["status"] == "ok" and res["stdout"].startswith("refused "), res
    assert int(res["stdout"].split()[1]) < 16, res
