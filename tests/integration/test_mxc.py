# SPDX-License-Identifier: MIT
"""The MXC backend (plugins/mxc) against Microsoft MXC's real Linux executor,
lxc-exec from @microsoft/mxc-sdk (scripts/mxc-executor.sh): what the
plugin's README table claims, checked from inside the box and from the
host. Runs when SBX_TEST_BACKEND=mxc (ctest integration.mxc), beside the
contract suite; the other backends skip it."""
import ast
import base64
import glob
import json
import os
import subprocess
import time

import pytest

import conftest
from conftest import (FILTER_PROBE, HOST_UID_OF_SANDBOX, INSIDE_UID, MXC, ROOT, SANDBOX_UID,
                      SBX_BIN, SBX_SOURCE_DIR, backend_controls, clean_env, code, find_marked,
                      mxc_executor, new_mark, proc_environ, proc_status, sbx)

pytestmark = [pytest.mark.mxc,
              pytest.mark.skipif(not MXC, reason="the mxc backend's own checks")]

GOLDEN = sorted(glob.glob(os.path.join(SBX_SOURCE_DIR, "tests", "golden", "mxc", "*.json")))

def executor(args, config=None, timeout=60):
    """lxc-exec itself, with a clean PATH (it finds bwrap there)."""
    argv = [mxc_executor()] + list(args)
    return subprocess.run(argv, input=config, capture_output=True, timeout=timeout,
                          env={"PATH": "/usr/bin:/bin"})


@pytest.mark.parametrize("path", GOLDEN, ids=[os.path.basename(p) for p in GOLDEN])
def test_golden_configs_pass_the_executors_validation(path):
    """Every configuration the translator's golden tests pin, the
    Windows-targeted ones too, is what the real executor accepts."""
    p = executor(["--dry-run", path])
    assert p.returncode == 0, p
    assert b"Dry run completed. Result: validation passed" in p.stdout, p


def test_dry_run_rejects_what_the_contract_lacks(tmp_path):
    """The validation above is not a formality: one key more, and the same
    executor refuses the configuration, naming the key."""
    names = [os.path.basename(p) for p in GOLDEN]
    assert {"linux_default.json", "windows_default.json"} <= set(names), GOLDEN
    with open(GOLDEN[0]) as f:
        conf = json.load(f)
    conf["process"]["seccompProfile"] = "ours"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(conf))
    p = executor(["--dry-run", str(bad)])
    assert p.returncode == 1, p
    assert b"unknown field `seccompProfile`" in p.stderr, p


def test_probe_reports_what_mxc_and_the_core_enforce():
    ctl = backend_controls()
    assert ctl["seccomp"]["level"] == "full", ctl["seccomp"]
    assert "applied by the sandbox agent" in ctl["seccomp"]["note"], ctl["seccomp"]
    for name in ("workspace", "network_on", "network_host", "network_registries",
                 "network_allowlist", "host_mounts", "read_only_system"):
        assert ctl[name]["level"] == "none", (name, ctl[name])
    for name in ("wall_time", "output", "file_size", "network_off",
                 "environment", "no_new_privs", "unprivileged"):
        assert ctl[name]["level"] == "full", (name, ctl[name])
    if ROOT:
        for name in ("memory", "cpu", "pids"):
            assert ctl[name]["level"] == "full" and "cgroup" in ctl[name]["note"], ctl[name]
    else:  # as bwrap reports it: the rlimit fallback
        assert ctl["memory"]["level"] == "fallback", ctl["memory"]
        assert "RLIMIT_AS" in ctl["memory"]["note"], ctl["memory"]
        assert ctl["pids"]["level"] == "fallback", ctl["pids"]


def test_a_read_only_system_is_refused():
    """The box's own / is MXC's writable tmpfs: with the default
    SANDBOX_READ_ONLY the run is refused, naming the control (the other
    tests run with SANDBOX_READ_ONLY=false, as an operator would)."""
    res = code("print(1)", extra_env={"SANDBOX_READ_ONLY": None})
    assert res["status"] == "refused", res
    assert "read_only_system" in res["message"] and "writable" in res["message"], res


def test_the_core_filter_is_in_force_inside():
    res = code(FILTER_PROBE)
    assert res["status"] == "ok", res
    assert res["stdout"] == "unshare -1 EPERM\nptrace -1 EPERM\nnnp 1 seccomp 2\n", res


def test_control_the_same_box_without_the_agent_has_no_filter():
    """The probe run by lxc-exec directly, in a box configured as the
    plugin configures one (a golden file's policy) but without the agent:
    the calls succeed and no filter is there, so the EPERMs above are the
    core's filter, carried in by the agent, and nothing of MXC's."""
    with open(os.path.join(SBX_SOURCE_DIR, "tests", "golden", "mxc", "linux_default.json")) as f:
        conf = json.load(f)
    conf["process"]["commandLine"] = "exec /usr/bin/python3 -c '%s'" % FILTER_PROBE.replace("'", "\"")
    conf["filesystem"]["readonlyPaths"] = ["/usr"]
    p = executor(["--config-base64", base64.b64encode(json.dumps(conf).encode()).decode()])
    assert p.returncode == 0, p
    assert p.stdout.decode() == "unshare 0 0\nptrace 0 0\nnnp 1 seccomp 0\n", p


def test_paths_read_only_writable_and_denied():
    res = code(r"""
import errno, json, os
out = {}
def attempt(name, fn):
    try:
        fn(); out[name] = "ok"
    except OSError as e:
        out[name] = errno.errorcode[e.errno]
for p in ("/usr/evil", "/usr/lib/evil", "/bin/evil", "/etc/ssl/evil", "/etc/ld.so.cache"):
    attempt("write " + p, lambda p=p: open(p, "a").write("x"))
attempt("write /workspace", lambda: open("/workspace/w", "w").write("x"))
attempt("write /tmp", lambda: open("/tmp/w", "w").write("x"))
for p in ("/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssh", "/etc/hostname",
          "/etc/machine-id", "/etc/docker", "/var/lib", "/srv", "/opt", "/work", "/sys"):
    attempt("stat " + p, lambda p=p: os.stat(p))
out["/root"] = sorted(os.listdir("/root"))
out["/home"] = sorted(os.listdir("/home")) if os.path.isdir("/home") else None
out["/etc"] = sorted(os.listdir("/etc"))
out["passwd"] = open("/etc/passwd").read()
out["agent"] = open("/proc/%d/cmdline" % os.getppid(), "rb").read().split(b"\0")[0].decode()
attempt("write agent", lambda: open(out["agent"], "ab"))
out["pid1"] = open("/proc/1/cmdline", "rb").read().split(b"\0")[0].decode()
out["mounts"] = {l.split()[4]: l.split()[5].split(",")[0] for l in open("/proc/self/mountinfo")}
print(json.dumps(out))
""")
    assert res["status"] == "ok", res
    info = json.loads(res["stdout"])
    for p in ("/usr/evil", "/usr/lib/evil", "/bin/evil", "/etc/ssl/evil"):
        assert info["write " + p] == "EROFS", (p, info)
    # an existing file of root's: permission is checked first (mountinfo: ro)
    assert info["write /etc/ld.so.cache"] in ("EROFS", "EACCES"), info
    assert info["write /workspace"] == "ok" and info["write /tmp"] == "ok", info
    for p in ("/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssh", "/etc/hostname",
              "/etc/machine-id", "/etc/docker", "/var/lib", "/srv", "/opt", "/work", "/sys"):
        assert info["stat " + p] == "ENOENT", (p, info)
    assert info["/root"] == [] and info["/home"] in ([], None), info
    # /etc: only the files runtimes need, read-only, and the generated ones
    allowed = {"alternatives", "ca-certificates", "fonts", "group", "hosts", "ld.so.cache",
               "ld.so.conf", "ld.so.conf.d", "localtime", "matplotlibrc", "mime.types",
               "nsswitch.conf", "os-release", "passwd", "protocols", "python3", "python3.11",
               "services", "ssl"}
    assert set(info["/etc"]) <= allowed, set(info["/etc"]) - allowed
    assert "sandbox:x:%d:" % INSIDE_UID in info["passwd"], info["passwd"]
    with open("/etc/passwd") as f:
        host_users = {line.split(":")[0] for line in f if line.strip()}
    seen = {line.split(":")[0] for line in info["passwd"].splitlines()}
    assert seen <= {"root", "sandbox", "nobody"} and seen != host_users, seen
    # the agent is the core's, bound read-only from the instance's copy;
    # MXC's bwrap, not the agent, is pid 1 of the box
    assert info["agent"].startswith("/var/tmp/llm-sandbox-mxc-"), info
    assert info["agent"].endswith("/sbx-agent"), info
    assert info["write agent"] in ("EROFS", "EACCES"), info
    for point in (info["agent"], "/usr", "/usr/bin", "/etc/ssl", "/etc/ld.so.cache"):  # ro binds
        assert info["mounts"].get(point) == "ro", (point, info["mounts"])
    for point in ("/", "/etc", "/tmp"):  # the box's own tmpfs
        assert info["mounts"].get(point) == "rw", (point, info["mounts"])
    assert info["pid1"] == "bwrap", info


def test_network_off_reaches_nothing(canary):
    res = code("import socket, errno\n"
               "s = socket.socket()\ns.settimeout(3)\n"
               "print(errno.errorcode[s.connect_ex(('127.0.0.1', %d))])\n"
               "print(sorted(l.split(':')[0].strip() for l in open('/proc/net/dev')"
               ".readlines()[2:]))" % canary.port)
    assert res["status"] == "ok", res
    assert res["stdout"] == "ECONNREFUSED\n['lo']\n", res
    assert canary.connections() == 0


def test_stdin_output_environment_and_exit_code():
    r = sbx("--stdin", "-", "--code", "import os, sys\ndata = sys.stdin.read()\n"
            "print(data.upper(), end='')\nprint('to stderr', file=sys.stderr)\n"
            "print(sorted(k for k in os.environ if k != 'PWD'))\nsys.exit(7)",
            input=b"hello mxc\n", extra_env={"SECRET_TOKEN": "s3cr3t"})
    res = r.json
    assert res["status"] == "error" and res["exit_code"] == 7, res
    lines = res["stdout"].splitlines()
    assert lines[0] == "HELLO MXC", res
    expected = set(conftest.BASE_ENV) | set(conftest.PYTHON_ENV) | {conftest.MARK_KEY}
    assert set(ast.literal_eval(lines[1])) == expected, res
    assert "s3cr3t" not in res["stdout"] and res["stderr"] == "to stderr\n", res


def test_timeout_leaves_no_survivor():
    """A program that puts a child in a session of its own and hangs: the
    core's deadline ends the box (MXC's own timeout is only a backstop),
    and nothing of it is left (the autouse fixture checks the host)."""
    mark = new_mark()
    t0 = time.monotonic()
    r = sbx("--timeout", "2", "--code",
            "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(300)\n"
            "time.sleep(300)", env=clean_env(mark_value=mark))
    res = r.json
    assert res["status"] == "timeout" and res["limit"] == "wall_time", res
    assert time.monotonic() - t0 < 15, res
    assert find_marked(mark) == []


def test_executor_from_outside():
    """lxc-exec runs as the sandbox uid with the clean environment and an
    absolute PATH, its configuration in a memfd, not on its command line."""
    mark = new_mark()
    p = subprocess.Popen([SBX_BIN, "run", "--json", "--code", "import time; time.sleep(1.5)"],
                         env=clean_env({"SECRET_TOKEN": "leak-check"}, mark_value=mark),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, cwd="/")
    conftest._cli_pids.append(p.pid)
    try:
        found = []
        deadline = time.monotonic() + 10
        while not found and time.monotonic() < deadline:
            found = find_marked(mark, "lxc-exec")
            time.sleep(0.02)
        assert found, "no lxc-exec of this run"
        pid = found[0]
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = f.read().split(b"\0")[:-1]
        assert argv == [mxc_executor().encode(), b"--config", b"/proc/self/fd/3"], argv
        env = proc_environ(pid)
        assert "PATH=/usr/bin:/bin" in env and not any("SECRET" in e for e in env), env
        st = proc_status(pid)
        assert st["Uid"].split() == [str(HOST_UID_OF_SANDBOX)] * 4, st["Uid"]
        assert st["CapEff"] == "0000000000000000", st["CapEff"]
        if ROOT:
            assert HOST_UID_OF_SANDBOX == SANDBOX_UID
            # the agent (non-dumpable: root can look) holds no descriptor of
            # the host's but its pipes: the configuration's was closed
            agent = box_agent(pid)
            fds = [os.readlink("/proc/%d/fd/%s" % (agent, n))
                   for n in os.listdir("/proc/%d/fd" % agent)]
            assert not [f for f in fds if "mxc-config" in f or f.startswith("/")
                        and not f.startswith(("/workspace", "/tmp", "/dev/null"))], fds
    finally:
        out, err = p.communicate(timeout=30)
    assert json.loads(out)["status"] == "ok", (out, err)


def box_agent(executor_pid):
    """The agent of the box lxc-exec executor_pid runs: lxc-exec, its bwrap,
    the box's pid 1 (bwrap), then MXC's `sh -c`, which execs the agent (a
    moment after the box is up: wait for it, bounded)."""
    deadline = time.monotonic() + 10
    while True:
        pid, comm = executor_pid, None
        for _ in range(3):
            with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                children = f.read().split()
            if not children:  # the next process of the chain is not forked yet
                break
            pid = int(children[0])
        else:
            with open("/proc/%d/comm" % pid) as f:
                comm = f.read().strip()
        if comm == "sbx-agent" or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert comm == "sbx-agent", (pid, comm)
    return pid


def test_memory_limit_the_core_adds():
    res = code("b = bytearray(1 << 30)\nprint(len(b))", "--memory", "128M")
    if ROOT:  # the core's cgroup around lxc-exec
        assert res["status"] == "oom" and res["limit"] == "memory", res
    else:  # the agent's RLIMIT_AS: the allocation fails, reported as a fallback
        assert res["status"] == "error" and "MemoryError" in res["stderr"], res
        assert any(w.startswith("memory limit enforced by a fallback: RLIMIT_AS")
                   for w in res["warnings"]), res


def test_workspace_size_is_refused_naming_the_control():
    res = code("print(1)", "--workspace", "16M")
    assert res["status"] == "refused", res
    assert "cannot enforce workspace" in res["message"], res


def test_agent_copy_goes_with_the_server():
    """Each server keeps one read-only copy of the agent for its boxes and
    removes it when it exits."""
    before = conftest.mxc_agent_dirs()
    mark = new_mark()
    p = subprocess.Popen([SBX_BIN, "run", "--json", "--code", "import time; time.sleep(1)"],
                         env=clean_env(mark_value=mark), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd="/")
    conftest._cli_pids.append(p.pid)
    try:
        during = set()
        deadline = time.monotonic() + 10
        while not during and time.monotonic() < deadline:
            during = conftest.mxc_agent_dirs() - before
            time.sleep(0.02)
        assert len(during) == 1, during
        (made,) = during
        assert os.path.basename(made).startswith("llm-sandbox-mxc-p%dt" % p.pid), made
        assert sorted(os.listdir(made)) == ["sbx-agent"], made
        assert oct(os.stat(made + "/sbx-agent").st_mode & 0o7777) == "0o555"
    finally:
        out, err = p.communicate(timeout=30)
    assert json.loads(out)["status"] == "ok", (out, err)
    assert conftest.mxc_agent_dirs() - before == set()
