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
import subprocess
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


def test_launched_through_wsl_exe_without_a_shell():
    """From the host while a run lives: the process the CLI started is the
    launcher that became the opener, bwrap's parent (the stand-in execs only
    bwrap or the opener, and only after checking -d, -u, --cd / and
    --exec), given no descriptor (no --info-fd), in the environment a WSL
    session starts with (WSL_INTEROP and all: wsl.exe carries none of
    ours), while the program inside has exactly the documented environment,
    which bwrap was given as --clearenv and --setenv."""
    mark = new_mark()
    env = clean_env(mark_value=mark)
    src = "open('.ready', 'w').close()\nimport time\ntime.sleep(2)\n"
    p = subprocess.Popen([SBX_BIN, "run", "--json", "--timeout", "20", "--code", src], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, cwd="/")
    conftest._cli_pids.append(p.pid)
    try:
        prog = None
        deadline = time.monotonic() + 20
        while prog is None and time.monotonic() < deadline and p.poll() is None:
            found = find_marked(mark, "python3")
            if found and os.path.exists("/proc/%d/cwd/.ready" % found[0]):
                prog = found[0]
            else:
                time.sleep(0.02)
        assert prog, "the program was not seen running"
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
