# SPDX-License-Identifier: MIT
"""Contract test of the WSL2 backend in the Windows build, under wine
(ctest windows.wine.wsl2): the real llm-sandbox.exe loads wsl2.dll, probes
through wsl_stub.exe (tests/windows/wsl_stub.c, standing in for wsl.exe)
and runs python's execute_code over MCP stdio through it.

What this proves: the Windows core's whole run path -- the DLL loaded by
libltdl, the host table's processes (CreateProcessW with a quoted command
line, a Job Object, three pipes), the probe's questions and their UTF-16
answers, the bubblewrap argv in WSL2 mode as wsl.exe's C runtime splits
it again, the opener's stream (the seccomp program compiled for Linux,
the static agent, the /etc files, the limits) checked by the plugin's own
parser, the agent protocol both ways over the pipes (staging, EXEC, output,
exit codes, the artifacts' listing), and a timeout and a cancellation
that end the launcher's whole Job Object. What it does not: there is no Linux behind
the stub, so no bwrap, no opener, no agent and no python run; their
output is computed by the stub from what it was sent. Nothing here says
that WSL2 enforces anything on a real Windows.

    SBX_BIN=build-windows/bin/llm-sandbox-wine SBX_WINDOWS_BINDIR=build-windows/bin \\
        python3 -m pytest -q tests/windows/test_wsl2_wine.py
"""
import os
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mcp"))
from mcptest import SBX_BIN, Server, clean_env  # noqa: E402

BINDIR = os.environ.get("SBX_WINDOWS_BINDIR", "")
STUB = os.path.join(BINDIR, "wsl_stub.exe")
LOG = os.path.join(BINDIR, "wsl_stub.log")
# an opener path a naive command line would break: spaces, quotes, and
# backslashes before a quote and at the end
OPENER = '/opt/sbx tools/wsl2 "open" a\\"b\\'
DISTRO, USER = "sbx-wine", "sandbox"

pytestmark = pytest.mark.skipif(not os.access(SBX_BIN, os.X_OK) or not os.path.exists(STUB),
                                reason="no llm-sandbox.exe wrapper or wsl_stub.exe")


def win_path(path):
    return "Z:" + str(path).replace("/", "\\")  # wine's Z: is /


def settings(**extra):
    env = {"BACKEND": "wsl2", "LLM_SANDBOX_WSL2_DISTRO": DISTRO, "LLM_SANDBOX_WSL2_USER": USER,
           "LLM_SANDBOX_WSL2_LAUNCHER": win_path(STUB), "LLM_SANDBOX_WSL2_OPENER": OPENER}
    env.update(extra)
    return clean_env(env)


def transcript():
    """The stub's transcript: one list of fields per line."""
    with open(LOG, encoding="utf-8") as f:
        return [line.rstrip("\n").split("\t") for line in f]


def unescape(field):
    return field.replace("\\n", "\n").replace("\\t", "\t").replace("\\\\", "\\")


def stubs_alive():
    """wine's processes of wsl_stub.exe still running on this host."""
    alive = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if b"wsl_stub.exe" in cmd:
            alive.append(int(pid))
    return alive


@pytest.fixture
def server():
    if os.path.exists(LOG):
        os.unlink(LOG)
    s = Server(env=settings())
    s.initialize()
    yield s
    s.kill()


def test_python_runs_through_the_stub(server):
    res = server.call_tool("execute_code", {"language": "python",
                                            "code": 'print("hello from wine")\nprint("two")\n'})
    st = res["result"]["structuredContent"]
    assert st["status"] == "ok" and st["exit_code"] == 0, st
    assert st["stdout"] == "hello from wine\ntwo\n" and st["stderr"] == "", st
    log = transcript()
    boxes = [f[1:] for f in log if f[0] == "argv" and "--unshare-user" in f]
    assert len(boxes) >= 2, log  # the probe's trial box, then the run's
    argv = [unescape(a) for a in boxes[-1]]
    # the launcher's words as wsl.exe's C runtime split the command line:
    # the opener's path byte for byte, then bwrap's argv in WSL2 mode
    assert argv[:9] == ["-d", DISTRO, "-u", USER, "--cd", "/", "--exec", OPENER,
                        "/usr/bin/bwrap"], argv[:9]
    assert argv[argv.index("--seccomp") + 1] == "3", argv
    assert "--info-fd" not in argv and "--clearenv" in argv, argv
    # the stream: the BPF program, the agent (an ELF file), the /etc files,
    # then the limits, each blob at the descriptor bwrap's argv names
    blobs = {int(f[1].split()[0]): f[1].split()[2] for f in log if f[0] == "blob"}
    assert blobs == {3: "bpf", 4: "elf", 5: "text", 6: "text", 7: "text"}, blobs
    assert any(f[0] == "limits" for f in log), log
    execs = [f[1:] for f in log if f[0] == "exec"]
    assert execs[-1] == ["python3", "-S", "/tmp/.sbx/python/_sbx_start.py", "main.py"], execs
    puts = [f[1] for f in log if f[0] == "put" and f[2] == "workspace"]
    assert puts[-1] == "main.py", puts


def test_exit_codes_come_back(server):
    res = server.call_tool("execute_code", {"language": "python",
                                            "code": 'print("bye")\nexit(3)\n'})
    st = res["result"]["structuredContent"]
    assert st["exit_code"] == 3 and st["stdout"] == "bye\n", st
    assert st["status"] != "ok" and res["result"]["isError"] is True, st


def test_a_timeout_kills_the_launchers_job(server):
    t0 = time.monotonic()
    res = server.call_tool("execute_code", {"language": "python", "timeout": 2,
                                            "code": 'print("spinning")\nwhile True:\n    pass\n'},
                           timeout=60)
    took = time.monotonic() - t0
    st = res["result"]["structuredContent"]
    assert st["status"] == "timeout", st
    assert took < 20, took
    log = transcript()
    assert log[-1][0] == "running" or ["running"] in log, log
    # the stub never saw its input end nor a QUIT: the Job Object ended it
    after = log[[i for i, f in enumerate(log) if f[0] == "running"][-1]:]
    assert not any(f[0] in ("eof", "quit") for f in after), after
    deadline = time.monotonic() + 10
    while stubs_alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert stubs_alive() == [], stubs_alive()


def test_a_wsl1_distribution_is_refused():
    s = Server(env=settings(LLM_SANDBOX_WSL2_DISTRO="Debian"))
    try:
        s.initialize()
        res = s.call_tool("execute_code", {"language": "python", "code": 'print(1)\n'})
        st = res["result"]["structuredContent"]
        assert st["status"] == "refused", st
        assert "WSL version 1" in st["message"], st
    finally:
        s.kill()


def test_a_cancellation_kills_the_launchers_job(server):
    """notifications/cancelled during a run wakes the agent channel's wait
    (the cancellation flag is a pipe the emulated poll() sees) and the
    launcher's Job Object is killed at once, long before the run's 30 s."""
    rid = server.request_async("tools/call", {"name": "execute_code", "arguments": {
        "language": "python", "timeout": 30, "code": 'print("x")\nwhile True:\n    pass\n'}})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (
            os.path.exists(LOG) and any(f[0] == "running" for f in transcript())):
        time.sleep(0.05)
    assert stubs_alive(), "the run never started"
    t0 = time.monotonic()
    server.notify("notifications/cancelled", {"requestId": rid, "reason": "test"})
    while stubs_alive() and time.monotonic() - t0 < 10:
        time.sleep(0.05)
    took = time.monotonic() - t0
    assert stubs_alive() == [] and took < 5, took
    after = transcript()
    after = after[[i for i, f in enumerate(after) if f[0] == "running"][-1]:]
    assert not any(f[0] in ("eof", "quit") for f in after), after
    assert server.request("ping")["result"] == {}  # the server goes on


def test_the_cli_runs_through_the_stub():
    """`llm-sandbox.exe run`: the program's stdout on stdout, its exit code
    as the command's."""
    import subprocess
    p = subprocess.run([SBX_BIN, "run", "--language", "python", "--code", 'print("cli")\nexit(4)\n'],
                       env=settings(), capture_output=True, timeout=120)
    assert p.stdout.replace(b"\r\n", b"\n") == b"cli\n", (p.stdout, p.stderr)
    assert p.returncode == 4, (p.returncode, p.stderr)
