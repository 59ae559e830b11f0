# SPDX-License-Identifier: MIT
"""The front end killed mid-run (issue 9, reliability): SIGKILL of the CLI
or of the MCP server while a hostile program runs (a setsid'd child that
ignores every signal it can). Nothing of the sandbox may survive its
launcher, and the next start of llm-sandbox removes the dead owner's
cgroups (as root). Checked from the host, by the sandbox's uid."""
import os
import subprocess
import sys
import time

import pytest

from conftest import (BACKEND, CONTAINER, SBX_BIN, cgroup_groups, cgroups_enforced, clean_env,
                      engine_containers, find_marked, itest, new_mark, owner_of, run_lang,
                      sandbox_uid_processes, survivors)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "mcp"))
import mcptest  # noqa: E402

STUBBORN = r"""
import os, signal, time
if os.fork() == 0:
    os.setsid()
    for s in range(1, signal.NSIG):
        try:
            signal.signal(s, signal.SIG_IGN)
        except (OSError, ValueError):
            pass
    while True:
        time.sleep(0.1)
time.sleep(120)
"""


def _groups_of(pid):
    return {g for g in cgroup_groups() if os.path.basename(g).startswith("p%dt" % pid)}


@pytest.mark.parametrize("front", ["cli", pytest.param("mcp", marks=pytest.mark.xfail(
    BACKEND == "podman", strict=False,
    reason="seen once on Podman: containers of the SIGKILLed MCP server (its spare box, "
           "Initialized, and one that exited only then) were still listed after the next "
           "start's sweep; not strict until it is understood (it passed on other runs)"))])
def test_sigkill_of_the_front_end_leaves_nothing(front):
    before = sandbox_uid_processes()
    mark = new_mark()
    env = clean_env(mark_value=mark)
    if front == "cli":
        proc = subprocess.Popen([SBX_BIN, "run", "--json", "--timeout", "120", "--code", STUBBORN],
                                env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, cwd="/")
        server = None
    else:
        server = mcptest.Server(env=env)
        server.initialize()
        server.request_async("tools/call", {"name": "execute_code",
                                            "arguments": {"code": STUBBORN, "timeout": 120}})
        proc = server.proc
    itest._cli_pids.append(proc.pid)
    try:
        deadline = time.monotonic() + 20
        while len(find_marked(mark, "python3")) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(find_marked(mark, "python3")) >= 2, "the program and its child never ran"
        groups = _groups_of(proc.pid)
        owner = owner_of(proc.pid)
        if CONTAINER:  # the engine's cgroups, not ours: its containers instead
            # (an MCP server may have started a spare box besides the run's)
            assert True in [c["State"]["Running"] for c in engine_containers(owner)]
        elif cgroups_enforced():
            assert groups, "a run without a cgroup where cgroups are enforced"
            # named after their owner, scope included (core/src/host/owner.h)
            assert all(os.path.basename(g).startswith(owner + "-") for g in groups), (owner, groups)
        proc.kill()
        proc.wait(timeout=10)
        left = survivors(before, grace=5.0)
        assert not left, "outlived the %s's SIGKILL: %r" % (front, left)
        if CONTAINER:  # the lifeline stopped it: the engine says so too, once
            # its state has followed the processes' end (dockerd learns of
            # it from containerd a moment later; same grace as survivors)
            deadline = time.monotonic() + 5.0
            running = [c["Name"] for c in engine_containers(owner) if c["State"]["Running"]]
            while running and time.monotonic() < deadline:
                time.sleep(0.1)
                running = [c["Name"] for c in engine_containers(owner) if c["State"]["Running"]]
            assert not running, "containers outlived the %s's SIGKILL: %r" % (front, running)
    finally:
        if server:
            server.kill()
        else:
            proc.kill()
            proc.communicate()
    # the next start sweeps the dead owner's cgroups
    res = run_lang("python", "print('after')")
    assert res["status"] == "ok" and res["stdout"] == "after\n", res
    assert not (_groups_of(proc.pid) & groups), "cgroups of the killed %s stayed" % front
    if CONTAINER:
        left = [c["Name"] for c in engine_containers(owner)]
        assert not left, "the next start did not sweep the killed %s's containers: %r" % (
            front, left)
