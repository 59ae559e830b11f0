# SPDX-License-Identifier: MIT
"""Posture of a Kubernetes run (issue 19), read from the pod's processes on
this host, which is the test cluster's node, while a program is held at a
barrier: every task of the program and of the agent (pid 1 of the pod) runs
as the sandbox uid with no capability, no_new_privs and a seccomp filter
(the program two: the runtime's default and the core's own, which the agent
installs); the root is read-only and every writable mount a sized tmpfs; no
service-account token is mounted; the namespaces are the pod's; the program's
environment is exactly the documented one. (The kubelet mounts those tmpfs
without nosuid and nodev; the tasks' no_new_privs and empty bounding sets
make both moot.) test_container_posture.py holds the Docker and Podman
side, which reads the engine's inspect instead."""
import os

import pytest

from conftest import (ENV_BY_LANG, HOLD, MARK_KEY, MIB, SANDBOX_GID, SANDBOX_UID, itest, live_run,
                      ppid_of, proc_environ, proc_limits, proc_mounts, proc_tasks, task_status)

pytestmark = pytest.mark.skipif(not (itest.CLUSTER and itest.ROOT),
                                reason="the kubernetes backend on the test cluster (root)")

ZERO_CAPS = "0000000000000000"
THREADS = ("import threading\nev = threading.Event()\n"
           "for _ in range(3):\n    threading.Thread(target=ev.wait, daemon=True).start()\n")
ARGS = ["--memory", "200M", "--cpus", "0.5", "--workspace", "64M", "--file-size", "8M"]


@pytest.fixture(scope="module")
def held():
    """One run held at its barrier; the host's view of its program and agent."""
    with live_run(THREADS + HOLD["python"], *ARGS) as live:
        agent = ppid_of(live.pid)
        seen = {
            "program": {t: task_status(live.pid, t) for t in proc_tasks(live.pid)},
            "agent": {t: task_status(agent, t) for t in proc_tasks(agent)},
            "agent_status": task_status(agent, agent),
            "mounts": proc_mounts(live.pid),
            "ns": {n: os.readlink("/proc/%d/ns/%s" % (live.pid, n))
                   for n in ("mnt", "pid", "ipc", "uts", "net")},
            "agent_ns_pid": os.readlink("/proc/%d/ns/pid" % agent),
            "env": proc_environ(live.pid),
            "agent_env": proc_environ(agent),
            "limits": proc_limits(live.pid),
            "agent_comm": itest.proc_stat(agent)[0],
        }
    assert live.result["status"] == "ok", live.result
    return seen


def test_every_task_unprivileged(held):
    assert held["agent_comm"] == "agent", held["agent_comm"]
    assert len(held["program"]) >= 4, "the program's threads: %r" % sorted(held["program"])
    for who in ("program", "agent"):
        for tid, st in held[who].items():
            assert st["Uid"].split() == [str(SANDBOX_UID)] * 4, (who, tid, st["Uid"])
            assert st["Gid"].split() == [str(SANDBOX_GID)] * 4, (who, tid, st["Gid"])
            assert st["Groups"].split() in ([], [str(SANDBOX_GID)]), (who, tid, st["Groups"])
            for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
                assert st[cap] == ZERO_CAPS, (who, tid, cap, st[cap])
            assert st["NoNewPrivs"] == "1", (who, tid)
            assert st["Seccomp"] == "2", (who, tid, st["Seccomp"])


def test_the_program_has_the_cores_filter_on_the_runtimes(held):
    """RuntimeDefault for the whole pod (the agent has that one); the
    program has the core's policy on top, installed by the agent."""
    agent = int(held["agent_status"]["Seccomp_filters"])
    for tid, st in held["program"].items():
        assert int(st["Seccomp_filters"]) == agent + 1, (tid, st["Seccomp_filters"], agent)


def test_agent_is_pid_1_of_the_pods_own_namespaces(held):
    host = {n: os.readlink("/proc/self/ns/%s" % n) for n in held["ns"]}
    for n, v in held["ns"].items():
        assert v != host[n], "the program shares the host's %s namespace" % n
    assert held["agent_ns_pid"] == held["ns"]["pid"]
    assert held["agent_status"]["NSpid"].split()[-1] == "1", held["agent_status"]["NSpid"]


def test_mounts_read_only_root_sized_tmpfs_no_token(held):
    mounts = {m[0]: m for m in held["mounts"]}
    root = mounts["/"]
    assert "ro" in root[1], root
    for path in ("/workspace", "/tmp", "/dev/shm"):
        point, opts, fstype, sopts = mounts[path]
        assert fstype == "tmpfs", mounts[path]
        assert "size=%dk" % (64 * MIB // 1024) in sopts, mounts[path]
        # The kubelet mounts a memory emptyDir without nosuid and nodev (a
        # pod cannot ask for them); no_new_privs and the empty bounding set
        # of every task (test_every_task_unprivileged) leave a set-id bit
        # without effect and a device node impossible to make.
        assert "rw" in opts, mounts[path]
    for point, opts, fstype, sopts in held["mounts"]:
        assert "serviceaccount" not in point and "secrets" not in point, point
        writable = "rw" in opts
        if writable and point not in ("/workspace", "/tmp", "/dev/shm"):
            # the kernel's own (proc, sys, the pod's /dev, /etc/hosts and
            # the like are the runtime's): never the image, never a disk
            assert fstype in ("proc", "tmpfs", "devpts", "mqueue", "sysfs", "cgroup", "cgroup2") \
                or point.startswith("/etc/") or point.startswith("/dev/"), (point, fstype, opts)
    assert "ro" in mounts["/etc/passwd"][1], mounts["/etc/passwd"]


def test_environment_exactly_the_documented_one(held):
    env = dict(e.split("=", 1) for e in held["env"])
    mark = {MARK_KEY: env.get(MARK_KEY)}
    assert env == dict(ENV_BY_LANG["python"], **mark), env
    # the node's address the boot's check needed went before the agent ran
    assert held["agent_env"] is None or not any(
        e.startswith("SBX_NODE_IP=") for e in held["agent_env"]), held["agent_env"]


def test_rlimits(held):
    lim = held["limits"]
    assert lim["Max file size"] == [str(8 * MIB)] * 2, lim["Max file size"]
    assert lim["Max core file size"] == ["0", "0"], lim["Max core file size"]
