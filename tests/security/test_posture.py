# SPDX-License-Identifier: MIT
"""Posture check (issue 9): while a sandboxed program runs, the host reads
its /proc entries and cgroupfs and asserts what the README promises, for
the program, every one of its threads and the agent (pid 1 inside). Nothing
here trusts what the sandboxed code says about itself."""
import os
import re

import pytest

from conftest import (BACKEND, CONTAINER, ENV_BY_LANG, HOLD, MARK_KEY, MIB,
                      OWNER_RE, ROOT, assert_box_ids, cgroup_version, cgroups_enforced,
                      is_sandbox_host_uid,
                      live_run, ppid_of, proc_environ,
                      proc_limits, proc_mounts, proc_status, proc_tasks, read_text,
                      task_status, fd_targets)

pytestmark = pytest.mark.skipif(
    CONTAINER, reason="the local jails' posture (a user namespace with one uid mapped, the "
    "runs' own cgroups and mount tree); a container's is checked by test_container_posture.py")

NAMESPACES = ("mnt", "pid", "ipc", "uts", "net", "user", "cgroup")
ZERO_CAPS = "0000000000000000"
LANGS = ["python", "javascript"]

# Threads the python program starts before it reports ready, so "every
# thread" means more than one (node has its own worker threads).
THREADS = ("import threading\nev = threading.Event()\n"
           "for _ in range(3):\n    threading.Thread(target=ev.wait, daemon=True).start()\n")


def ns(pid, name):
    return os.readlink("/proc/%d/ns/%s" % (pid, name))


def hold(lang):
    return (THREADS if lang == "python" else "") + HOLD[lang]


@pytest.mark.parametrize("lang", LANGS)
def test_new_namespaces_and_one_uid_mapped(lang):
    with live_run(hold(lang), lang=lang) as live:
        prog, agent = live.pid, ppid_of(live.pid)
        for name in NAMESPACES:
            host = ns(os.getpid(), name)  # where the CLI itself runs
            assert ns(prog, name) != host, "program shares the host's %s namespace" % name
            assert ns(agent, name) == ns(prog, name), "agent and program differ in %s" % name
        # exactly one id mapped: uid/gid 1000 inside is the sandbox's host id
        st = proc_status(prog)
        host = assert_box_ids(st["Uid"].split(), st["Gid"].split(), "program")
        for f in ("uid_map", "gid_map"):
            rows = [line.split() for line in read_text("/proc/%d/%s" % (prog, f)).splitlines()]
            assert rows == [["1000", str(host), "1"]], (f, rows)
        assert read_text("/proc/%d/setgroups" % prog).strip() == "deny"
        # the agent is pid 1 of the program's pid namespace
        nspid = proc_status(agent)["NSpid"].split()
        assert nspid[-1] == "1", nspid
        assert proc_status(prog)["NSpid"].split()[-1] != "1"
    assert live.result["status"] == "ok", live.result


@pytest.mark.parametrize("lang", LANGS)
def test_every_thread_unprivileged_and_filtered(lang):
    """NoNewPrivs, Seccomp in filter mode and no capability on every thread
    of the program and of the agent; the host ids are the sandbox's."""
    with live_run(hold(lang), lang=lang) as live:
        prog, agent = live.pid, ppid_of(live.pid)
        tasks = [(prog, t) for t in proc_tasks(prog)] + [(agent, t) for t in proc_tasks(agent)]
        assert len(proc_tasks(prog)) >= 4, "the program was meant to be multi-threaded"
        for pid, tid in tasks:
            st = task_status(pid, tid)
            where = "pid %d task %d" % (pid, tid)
            assert st["NoNewPrivs"] == "1", where
            assert st["Seccomp"] == "2", where
            assert int(st.get("Seccomp_filters", "1")) >= 1, where
            for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
                assert st[cap] == ZERO_CAPS, (where, cap, st[cap])
            assert_box_ids(st["Uid"].split(), st["Gid"].split(), where)
            if ROOT:
                assert st["Groups"] == "", (where, st["Groups"])
    assert live.result["status"] == "ok", live.result


ANON = re.compile(r"^(pipe|socket|anon_inode):")


def test_program_holds_only_its_standard_streams():
    with live_run(HOLD["python"]) as live:
        fds = fd_targets(live.pid)
        assert sorted(fds) == [0, 1, 2], fds
        assert all(ANON.match(t) for t in fds.values()), fds
        # the agent: pipes, its signalfd, the workspace and the sandbox's own
        # /tmp (where it stages a language's support files), nothing of the
        # host (it makes itself non-dumpable: only root may list its
        # descriptors)
        if ROOT:
            agent_pid = ppid_of(live.pid)
            agent = fd_targets(agent_pid)
            paths = {t for t in agent.values() if not ANON.match(t)}
            assert paths <= {"/workspace", "/tmp", "/dev/null"}, agent
            assert len(agent) >= 5, agent
            for fd, t in agent.items():
                if t == "/tmp":  # a tmpfs of the sandbox, not the host's /tmp
                    assert os.stat("/proc/%d/fd/%d" % (agent_pid, fd)).st_dev != \
                        os.stat("/tmp").st_dev, agent
    assert live.result["status"] == "ok", live.result


@pytest.mark.parametrize("lang", LANGS)
def test_no_descriptor_reaches_a_host_file(lang):
    """Whatever a runtime opens itself, no descriptor of the program points
    outside what the sandbox mounts (checked against the host's paths)."""
    with live_run(hold(lang), lang=lang) as live:
        for fd, target in fd_targets(live.pid).items():
            if ANON.match(target):
                continue
            assert target.startswith(("/workspace", "/dev/", "/tmp", "/usr/")), (fd, target)
    assert live.result["status"] == "ok", live.result


@pytest.mark.parametrize("lang", LANGS)
def test_environment_is_exactly_the_documented_one(lang):
    secret = "posture-secret-%d" % os.getpid()
    extra = {"SBX_SECRET_TOKEN": secret, "AWS_SECRET_ACCESS_KEY": secret,
             "LD_PRELOAD": "/nonexistent.so", "NODE_OPTIONS": "--require=/x"}
    with live_run(hold(lang), lang=lang, extra_env=extra) as live:
        seen = proc_environ(live.pid)
        agent_env = proc_environ(ppid_of(live.pid)) if ROOT else []
    assert live.result["status"] == "ok", live.result
    want = dict(ENV_BY_LANG[lang], **{MARK_KEY: live.mark})
    assert dict(e.split("=", 1) for e in seen) == want, seen
    assert len(seen) == len(want), "a duplicate variable: %r" % seen
    assert not [e for e in agent_env if secret in e or e.startswith("LD_PRELOAD")], agent_env


def _cgroup_paths(pid):
    out = {}
    for line in read_text("/proc/%d/cgroup" % pid).splitlines():
        _, ctrls, path = line.split(":", 2)
        for c in ctrls.split(","):
            out[c] = path
    return out


# The limits each version's files hold for the arguments below (a v1
# hierarchy per controller; one v2 directory).
CGROUP_FILES = {
    1: (("memory", {"memory.limit_in_bytes": str(200 * MIB)}), ("pids", {"pids.max": "50"}),
        ("cpu", {"cpu.cfs_quota_us": "50000", "cpu.cfs_period_us": "100000"})),
    2: (("", {"memory.max": str(200 * MIB), "pids.max": "50", "cpu.max": "50000 100000"}),),
}


def test_rlimits_and_cgroup_are_the_configured_ones():
    enforced = cgroups_enforced()
    args = ["--memory", "200M", "--pids", "50", "--file-size", "16M", "--cpus", "0.5"]
    if not enforced:
        args = args[:6]  # no CPU quota without a cgroup: it would be refused
    with live_run(HOLD["python"], *args) as live:
        prog, agent = live.pid, ppid_of(live.pid)
        cli = live.proc.pid
        for pid in (prog, agent):
            lim = proc_limits(pid)
            # soft and hard alike: the program cannot raise them back
            assert lim["Max file size"] == [str(16 * MIB)] * 2, lim
            assert lim["Max open files"] == ["1024"] * 2, lim
            assert lim["Max core file size"] == ["0"] * 2, lim
            if not enforced:
                assert lim["Max address space"] == [str(200 * MIB)] * 2, lim
                assert lim["Max processes"] == ["50"] * 2, lim
        if enforced:
            paths = _cgroup_paths(prog)
            assert paths == _cgroup_paths(agent), "agent and program in different groups"
            for ctl, files in CGROUP_FILES[cgroup_version()]:
                path = paths[ctl]
                m = OWNER_RE.match(os.path.basename(path))
                assert m and int(m.group(1)) == cli, "%s group %s is not this run's" % (ctl, path)
                assert "/llm-sandbox/" in path, path
                d = "/sys/fs/cgroup/%s%s" % (ctl, path) if ctl else "/sys/fs/cgroup" + path
                procs = {int(x) for x in read_text(d + "/cgroup.procs").split()}
                assert {prog, agent} <= procs, (ctl, procs)
                for name, want in files.items():
                    assert read_text(os.path.join(d, name)).strip() == want, (d, name)
                # the sandbox's host uid owns nothing there and cannot write
                for f in [d] + [os.path.join(d, n) for n in files] + [d + "/cgroup.procs"]:
                    st = os.stat(f)
                    assert not is_sandbox_host_uid(st.st_uid), f
                    assert not is_sandbox_host_uid(st.st_gid), f
                    assert not st.st_mode & 0o002, (f, oct(st.st_mode))
    assert live.result["status"] == "ok", live.result


# Device nodes bound from the host: writing to them writes to the device.
DEV_NODES = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}


@pytest.mark.parametrize("read_only", [
    "true",
    pytest.param("false", marks=pytest.mark.xfail(
        BACKEND in ("bwrap", "wsl2"), strict=True,
        reason="bubblewrap's own root tmpfs has no size option: with SANDBOX_READ_ONLY=false "
               "it is writable without a limit")),
])
def test_every_writable_mount_is_bounded(read_only):
    """From the host: the only writable file systems in the sandbox are the
    size-limited tmpfs mounts (and proc, devpts, the bound device nodes). A
    writable tmpfs without a size would be RAM the program could fill past
    every limit wherever no memory cgroup counts it."""
    with live_run(HOLD["python"], extra_env={"SANDBOX_READ_ONLY": read_only}) as live:
        mounts = proc_mounts(live.pid)
    assert live.result["status"] == "ok", live.result
    assert {m[0] for m in mounts} >= {"/", "/usr", "/proc", "/dev", "/tmp", "/workspace"}, mounts
    writable = [m for m in mounts if "rw" in m[1]]
    for point, opts, fstype, sopts in writable:
        if fstype == "tmpfs":
            assert any(o.startswith("size=") for o in sopts), \
                "writable tmpfs %s has no size: %s" % (point, sopts)
            assert "nosuid" in opts and "nodev" in opts, (point, opts)
        else:
            assert (fstype in ("proc", "devpts") or
                    (fstype == "devtmpfs" and point in DEV_NODES)), (point, fstype, opts)
    for point, opts, fstype, _ in mounts:
        if point == "/usr" or (point == "/" and read_only == "true"):
            assert "ro" in opts and "nosuid" in opts, (point, opts)
        if point.startswith("/etc/"):
            assert "ro" in opts, (point, opts)
