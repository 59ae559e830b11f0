# SPDX-License-Identifier: MIT
"""Posture of a container run (issue 9), Docker and Podman: what the
engine says it created (inspect: HostConfig, SecurityOpt, CapDrop, User,
ReadonlyRootfs, NetworkMode, labels) and what the host's /proc and
cgroupfs say of the container's processes (the agent is the inspect's
State.Pid, the program its child), while a program is held at a barrier.
test_posture.py holds the same checks for the local jails, whose user
namespace and own cgroups a container does not have."""
import os
import re
import stat

import pytest

from conftest import (BACKEND, CONTAINER, CONTAINER_NAMESPACES, ENV_BY_LANG, HOLD, MARK_KEY, MIB,
                      assert_box_ids, engine_container_of, is_sandbox_host_uid, live_run,
                      proc_environ, proc_limits, proc_mounts, proc_tasks, read_text, run_lang,
                      task_status, fd_targets)

pytestmark = pytest.mark.skipif(not CONTAINER, reason="container backends only (the local "
                                "jails' posture is test_posture.py)")

ZERO_CAPS = "0000000000000000"
PODMAN_DEFAULT_CAPS = {"CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "NET_BIND_SERVICE",
                       "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
# Podman 4.3 on cgroup v1: the host's cgroup namespace (test_own_cgroup_namespace)
NAMESPACES = [n for n in CONTAINER_NAMESPACES if n != "cgroup" or BACKEND != "podman"]
PODMAN_HOST_CGROUPNS = ("Podman 4.3 (Debian 12) ignores the compatible API's CgroupnsMode and "
                        "on cgroup v1 keeps the host's cgroup namespace (containers.conf cannot "
                        "change that there); the plugin refuses such a container unless "
                        "LLM_SANDBOX_PODMAN_ALLOW_HOST_CGROUPNS=true, which the fixture sets "
                        "(test_containers.py tests the refusal)")
LANGS = ["python", "javascript"]
THREADS = ("import threading\nev = threading.Event()\n"
           "for _ in range(3):\n    threading.Thread(target=ev.wait, daemon=True).start()\n")


def hold(lang):
    return (THREADS if lang == "python" else "") + HOLD[lang]


def test_engine_created_what_the_plugin_promises():
    args = ["--memory", "200M", "--pids", "50", "--cpus", "0.5", "--workspace", "64M"]
    with live_run(HOLD["python"], *args) as live:
        ct = engine_container_of(live)
    assert live.result["status"] == "ok", live.result
    hc, cfg = ct["HostConfig"], ct["Config"]
    assert hc["Privileged"] is False
    # Docker keeps ["ALL"]; Podman expands it to its default set (the
    # bounding sets on /proc are checked in the next test)
    drop = {c.upper().replace("CAP_", "") for c in hc["CapDrop"]}
    assert drop == {"ALL"} or drop >= PODMAN_DEFAULT_CAPS, hc["CapDrop"]
    assert not hc.get("CapAdd"), hc.get("CapAdd")
    opts = hc["SecurityOpt"] or []
    assert any(o in ("no-new-privileges", "no-new-privileges:true", "no-new-privileges=true")
               for o in opts), opts
    seccomp = [o for o in opts if o.startswith("seccomp")]
    assert seccomp and "unconfined" not in seccomp[0], opts
    assert hc["ReadonlyRootfs"] is True
    assert hc["NetworkMode"] == "none", hc["NetworkMode"]
    # Podman's compatible inspect leaves it empty (test_own_cgroup_namespace)
    assert hc.get("CgroupnsMode") == "private" or BACKEND == "podman", hc.get("CgroupnsMode")
    for mode in ("PidMode", "IpcMode", "UTSMode", "UsernsMode"):
        assert not str(hc.get(mode) or "").startswith("host"), (mode, hc.get(mode))
    assert not hc.get("Binds") and not hc.get("Devices") and not ct.get("Mounts"), \
        (hc.get("Binds"), hc.get("Devices"), ct.get("Mounts"))
    assert not hc.get("VolumesFrom") and not (cfg.get("Volumes") or {})
    # the box's own host ids (the program's, below), never a host account's
    user = [int(x) for x in cfg["User"].split(":")]
    assert assert_box_ids([str(user[0])] * 4, [str(user[1])] * 4, "User") == user[0], user
    assert hc["Memory"] == 200 * MIB and hc["MemorySwap"] == 200 * MIB, hc
    assert hc["PidsLimit"] == 50, hc["PidsLimit"]
    assert hc["NanoCpus"] == 500000000, hc["NanoCpus"]
    for path in ("/workspace", "/tmp"):
        opts = hc["Tmpfs"][path].split(",")
        assert "size=%d" % (64 * MIB) in opts or "size=64m" in opts, (path, opts)
        assert "nosuid" in opts and "nodev" in opts, (path, opts)
    # found by the owner label of this run's front end (engine_container_of)
    assert cfg["Labels"]["org.llm-sandbox.owner"].startswith("p%dt" % live.proc.pid)
    assert cfg["Labels"]["org.llm-sandbox.run"], cfg["Labels"]


@pytest.mark.parametrize("lang", LANGS)
def test_own_namespaces_and_every_thread_unprivileged(lang):
    """Namespaces of its own (not user: a rootful engine maps none, so the
    uid is checked instead; cgroup: also the next test, and not on
    Podman 4.3), and NoNewPrivs, Seccomp filter mode, no
    capability and the sandbox uid on every thread of program and agent."""
    with live_run(hold(lang), lang=lang) as live:
        ct = engine_container_of(live)
        prog, agent = live.pid, ct["State"]["Pid"]
        for name in NAMESPACES:
            host = os.readlink("/proc/self/ns/%s" % name)
            mine = os.readlink("/proc/%d/ns/%s" % (prog, name))
            assert mine != host, "program shares the host's %s namespace" % name
            assert os.readlink("/proc/%d/ns/%s" % (agent, name)) == mine, name
        # the agent is pid 1 of the container's pid namespace
        assert task_status(agent, agent)["NSpid"].split()[-1] == "1"
        if lang == "python":
            assert len(proc_tasks(prog)) >= 4, "the program was meant to be multi-threaded"
        tasks = [(prog, t) for t in proc_tasks(prog)] + [(agent, t) for t in proc_tasks(agent)]
        for pid, tid in tasks:
            st = task_status(pid, tid)
            where = "pid %d task %d" % (pid, tid)
            assert st["NoNewPrivs"] == "1", where
            assert st["Seccomp"] == "2", where
            for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
                assert st[cap] == ZERO_CAPS, (where, cap, st[cap])
            uid = assert_box_ids(st["Uid"].split(), st["Gid"].split(), where)
            # the engine adds the user's own group from the image's
            # /etc/group (the plugin writes it): that gid and no other
            assert set(st["Groups"].split()) <= {str(uid)}, (where, st["Groups"])
    assert live.result["status"] == "ok", live.result


@pytest.mark.xfail(BACKEND == "podman", strict=True, reason=PODMAN_HOST_CGROUPNS)
def test_own_cgroup_namespace():
    """The program's cgroup namespace is the container's: its own
    /proc/self/cgroup names no host path (the host's view of the same file,
    relative to the reader's namespace, names the container's groups)."""
    src = "print(open('/proc/self/cgroup').read(), end='', flush=True)\n" + HOLD["python"]
    with live_run(src) as live:
        ct = engine_container_of(live)
        mine = os.readlink("/proc/%d/ns/cgroup" % live.pid)
        outside = read_text("/proc/%d/cgroup" % live.pid)
    assert live.result["status"] == "ok", live.result
    inside = live.result["stdout"]
    assert mine != os.readlink("/proc/self/ns/cgroup")
    assert ct["Id"][:12] in outside, outside
    assert inside.strip() and ct["Id"][:12] not in inside, inside
    # the namespace's root is the container's own group: every line ends in /
    assert all(line.endswith(":/") for line in inside.splitlines()), inside


ANON = re.compile(r"^(pipe|socket|anon_inode):")


def test_descriptors_and_environment():
    secret = "posture-secret-%d" % os.getpid()
    extra = {"SBX_SECRET_TOKEN": secret, "AWS_SECRET_ACCESS_KEY": secret,
             "LD_PRELOAD": "/nonexistent.so", "DOCKER_CERT_PATH": "/root/.docker"}
    with live_run(HOLD["python"], extra_env=extra) as live:
        ct = engine_container_of(live)
        agent = ct["State"]["Pid"]
        prog_fds, agent_fds = fd_targets(live.pid), fd_targets(agent)
        seen = proc_environ(live.pid)
        agent_env = proc_environ(agent)
        # the engine's own view of the container's environment
        engine_env = ct["Config"]["Env"] or []
    assert live.result["status"] == "ok", live.result
    assert sorted(prog_fds) == [0, 1, 2], prog_fds
    assert all(ANON.match(t) for t in prog_fds.values()), prog_fds
    paths = {t for t in agent_fds.values() if not ANON.match(t)}
    assert paths <= {"/workspace", "/tmp", "/dev/null"}, agent_fds
    want = dict(ENV_BY_LANG["python"], **{MARK_KEY: live.mark})
    assert dict(e.split("=", 1) for e in seen) == want, seen
    assert len(seen) == len(want), seen
    for env in (agent_env, engine_env):
        assert env is not None
        assert not [e for e in env if secret in e or e.startswith(("LD_PRELOAD", "DOCKER_"))], env


def _cgroup_dirs(pid):
    """{controller: host directory} of pid's cgroups (v1 and v2)."""
    out = {}
    for line in read_text("/proc/%d/cgroup" % pid).splitlines():
        _, ctrls, path = line.split(":", 2)
        for c in (ctrls.split(",") if ctrls else ["unified"]):
            base = "/sys/fs/cgroup" if c == "unified" and not os.path.isdir(
                "/sys/fs/cgroup/memory") else "/sys/fs/cgroup/%s" % c
            out[c] = base + path
    return out


def test_rlimits_and_cgroup_limits_from_the_host():
    args = ["--memory", "200M", "--pids", "50", "--file-size", "16M", "--cpus", "0.5"]
    with live_run(HOLD["python"], *args) as live:
        ct = engine_container_of(live)
        prog, agent = live.pid, ct["State"]["Pid"]
        for pid in (prog, agent):
            lim = proc_limits(pid)
            assert lim["Max file size"] == [str(16 * MIB)] * 2, (pid, lim)
            assert lim["Max open files"] == ["1024"] * 2, (pid, lim)
            assert lim["Max core file size"] == ["0"] * 2, (pid, lim)
        dirs = _cgroup_dirs(prog)
        assert dirs == _cgroup_dirs(agent), "agent and program in different groups"
        files = {}
        if "memory" in dirs:  # cgroup v1
            files = {("memory", "memory.limit_in_bytes"): str(200 * MIB),
                     ("pids", "pids.max"): "50"}
            quota, period = ("cpu", "cpu.cfs_quota_us"), ("cpu", "cpu.cfs_period_us")
            if os.path.exists(os.path.join(dirs["memory"], "memory.memsw.limit_in_bytes")):
                files[("memory", "memory.memsw.limit_in_bytes")] = str(200 * MIB)
        else:
            files = {("unified", "memory.max"): str(200 * MIB), ("unified", "pids.max"): "50",
                     ("unified", "memory.swap.max"): "0"}
        for (ctl, name), want in files.items():
            d = dirs[ctl]
            assert ct["Id"] in d, "%s group %s is not the container's" % (ctl, d)
            assert read_text(os.path.join(d, name)).strip() == want, (d, name)
            procs = {int(x) for x in read_text(d + "/cgroup.procs").split()}
            assert {prog, agent} <= procs, (ctl, procs)
            for f in (d, os.path.join(d, name), d + "/cgroup.procs"):
                st = os.stat(f)
                assert not is_sandbox_host_uid(st.st_uid) and not st.st_mode & 0o002, f
        if "memory" in dirs:
            q = int(read_text(os.path.join(dirs[quota[0]], quota[1])))
            p = int(read_text(os.path.join(dirs[period[0]], period[1])))
        else:
            q, p = (int(x) for x in read_text(dirs["unified"] + "/cpu.max").split())
        assert q * 2 == p, (q, p)
    assert live.result["status"] == "ok", live.result


def test_every_writable_mount_is_bounded_or_not_the_sandboxs():
    """From the host: each writable mount of the container is a sized tmpfs
    (nosuid, nodev), a kernel file system, or one whose root the sandbox
    uid cannot write (the engine's /etc/hosts and friends, cgroup v1's
    tmpfs). The root and everything from the image is read-only."""
    with live_run(HOLD["python"]) as live:
        engine_container_of(live)
        pid = live.pid
        mounts = proc_mounts(pid)
        owners = {m[0]: os.stat("/proc/%d/root%s" % (pid, m[0])) for m in mounts
                  if "rw" in m[1] and m[2] not in ("proc", "devpts", "mqueue", "sysfs", "cgroup",
                                                   "cgroup2")}
    assert live.result["status"] == "ok", live.result
    points = {m[0] for m in mounts}
    assert {"/", "/proc", "/dev", "/tmp", "/workspace", "/dev/shm"} <= points, mounts
    for point, opts, fstype, sopts in mounts:
        if point == "/":
            assert "ro" in opts, (point, opts)
        if "rw" not in opts:
            continue
        if point in owners and stat.S_ISCHR(owners[point].st_mode):
            # the engine's masks: its /dev/null over /proc/keys and friends
            assert owners[point].st_rdev == os.makedev(1, 3), point
            assert point.startswith("/proc/"), point
        elif fstype == "tmpfs" and (point in ("/workspace", "/tmp", "/dev/shm") or
                                  not (not is_sandbox_host_uid(owners[point].st_uid) and
                                       not owners[point].st_mode & 0o002)):
            assert any(o.startswith("size=") for o in sopts), (point, sopts)
            assert "nosuid" in opts and "nodev" in opts, (point, opts)
        elif fstype in ("proc", "devpts", "mqueue"):
            pass
        else:
            st = owners[point]
            assert not is_sandbox_host_uid(st.st_uid) and not st.st_mode & 0o002, \
                "%s (%s) is writable and the sandbox's: %o" % (point, fstype, st.st_mode)
            assert fstype == "tmpfs" or point.startswith("/etc/"), (point, fstype)


FILL = r"""
import errno, sys
b = b"x" * (1 << 20)
n = 0
try:
    for n in range(512):  # 1 MiB files: the file size limit does not stop it
        with open("%s.%%d" %% n, "wb") as f:
            f.write(b)
except OSError as e:
    print(n, errno.errorcode[e.errno])
    sys.exit(3)
print(n, "wrote")
"""


@pytest.mark.parametrize("where", ["/var/tmp/fill", "/run/fill", "/fill"])
def test_tmpfs_fill_outside_the_workspace_is_bounded(where):
    """Whatever the engine mounts writable outside the workspace, writing
    512 MiB there with 128 MiB of memory fails at once (read-only, not
    ours), fills a small sized tmpfs (Podman's /var/tmp, 16 MiB), or is
    ended by the memory limit: never written through."""
    res = run_lang("python", FILL % where, "--memory", "128M", "--timeout", "60")
    if res["status"] == "error" and res["exit_code"] == 3:
        n, err = res["stdout"].split()
        if err == "ENOSPC":
            assert BACKEND == "podman" and where == "/var/tmp/fill" and int(n) <= 16, res
        else:
            assert int(n) == 0 and err in ("EROFS", "EACCES", "ENOENT"), res
    else:
        # Podman does not report an OOM kill of a program that is not pid 1
        # (plugins/docker/README.md): it ends as killed by SIGKILL
        assert res["status"] in ("oom", "killed"), res
        assert res["status"] == "oom" or BACKEND == "podman", res
