# SPDX-License-Identifier: MIT
"""The outside checks are not vacuous: the helpers that the autouse fixture
and the network tests rely on do detect what they look for."""
import os
import socket
import subprocess
import time

import pytest

import conftest
from conftest import (MARK_KEY, clean_env, find_marked, leftover_processes, new_mark,
                      parse_single_json, process_snapshot, tmp_entry_is_ours, tmp_listing)
from test_pool import HOLD, release  # a run that lives until released


def test_leftover_process_detection():
    before = process_snapshot()
    mark = new_mark()
    env = clean_env(mark_value=mark)
    p = subprocess.Popen(["/usr/bin/sleep", "30"], env=env)
    try:
        deadline = time.monotonic() + 5
        while not find_marked(mark) and time.monotonic() < deadline:
            time.sleep(0.01)
        left = leftover_processes(before)
        assert [x for x in left if x[0] == p.pid], left
    finally:
        p.kill()
        p.wait()
    assert not [x for x in leftover_processes(before) if x[0] == p.pid]


def test_marker_reaches_the_sandbox():
    """Leftover detection relies on the marker being in every sandboxed
    process's environment."""
    mark = new_mark()
    r = conftest.sbx("--code", "import os; print(os.environ.get(%r))" % MARK_KEY,
                     env=clean_env(mark_value=mark))
    assert r.json["stdout"] == mark + "\n", r.json


def test_canary_sees_a_connection(canary):
    assert canary.connections() == 0
    c = socket.create_connection(("127.0.0.1", canary.port), timeout=2)
    try:
        time.sleep(0.05)
        assert canary.connections() == 1
    finally:
        c.close()


def test_single_json_parser_rejects_more_than_one_object():
    assert parse_single_json(b'{"a": 1}\n') == {"a": 1}
    with pytest.raises(AssertionError):
        parse_single_json(b'{"a": 1}\n{"b": 2}\n')
    with pytest.raises(AssertionError):
        parse_single_json(b'{"a": 1}')


def test_tmp_listing_sees_new_entries(tmp_path):
    # tmp_path itself lives under the ignored pytest-of-* directory
    assert all(not n.startswith("pytest-of-") for n in tmp_listing())
    import tempfile
    d = tempfile.mkdtemp(prefix="llm-sandbox-harness-", dir="/tmp")
    try:
        listing = tmp_listing()
        name = os.path.basename(d)
        assert name in listing
        assert tmp_entry_is_ours(name, listing[name])
        assert tmp_entry_is_ours("whatever", conftest.HOST_UID_OF_SANDBOX)
    finally:
        os.rmdir(d)


def test_cgroup_check_looks_where_the_groups_are():
    """While a run is in progress its group is found by the same scan the
    autouse fixture uses after every test (root: cgroup v1/v2; unprivileged:
    there are no groups to find)."""
    mark = new_mark()
    p = subprocess.Popen([conftest.SBX_BIN, "run", "--json", "--code",
                          HOLD], env=clean_env(mark_value=mark),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, cwd="/")
    conftest._cli_pids.append(p.pid)
    try:
        deadline = time.monotonic() + 10
        while not find_marked(mark, "python3") and time.monotonic() < deadline:
            time.sleep(0.02)
        assert find_marked(mark, "python3")
        ours = [g for g in conftest.cgroup_groups()
                if os.path.basename(g).startswith("p%dt" % p.pid)]
    finally:
        for pid in find_marked(mark, "python3"):
            release(pid)
        out, _ = p.communicate(timeout=30)
    if conftest.cgroups_enforced():
        assert ours, conftest.cgroup_parents()
        assert all("/llm-sandbox/p%dt" % p.pid in g for g in ours), ours
        if conftest.cgroup_facts()["how"] == "scope":  # in a scope systemd made for the run
            assert all("/llm-sandbox-p%dt" % p.pid in g for g in ours), ours
        with open("/proc/self/cgroup") as f:
            mem = [l.split(":", 2)[2].strip() for l in f if ":memory:" in l]
        if mem:
            assert any(g.startswith("/sys/fs/cgroup/memory%s/llm-sandbox/" % mem[0].rstrip("/"))
                       for g in ours), ours
    else:
        assert ours == [], ours
    assert parse_single_json(out)["status"] == "ok"
