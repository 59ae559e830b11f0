# SPDX-License-Identifier: MIT
"""In the Debian 12 guest (tests/vm/guest-run.sh runs it, as root and as the
user): the shipped systemd units (dist/systemd, the build's copy, whose
ExecStart= is the build's binary) started by the real manager, the system
one as root and the user's own otherwise. Through each, a 1 GiB allocation
under memory "128M" ends oom with limit memory: the unit's Delegate=yes
gives the server its cgroup subtree, and OOMPolicy=continue keeps the
server up after the sandbox's OOM kill. Afterwards no sandbox group is
left under the unit, only the server's leaf.

Environment: SBX_VM_BUILD (the build directory). Not part of ctest: it
installs units into the running manager's runtime directory."""
import http.client
import json
import os
import shutil
import socket
import subprocess
import time

import pytest

BUILD = os.environ.get("SBX_VM_BUILD", "")
UNITS = os.path.join(BUILD, "dist", "systemd", "build")
USER = os.geteuid() != 0
RUNTIME = os.environ.get("XDG_RUNTIME_DIR", "/run/user/%d" % os.geteuid())
SYSTEMCTL = ["systemctl", "--user"] if USER else ["systemctl"]
# the managers' runtime unit directories (systemd.unit(5))
UNIT_DIR = os.path.join(RUNTIME, "systemd", "user") if USER else "/run/systemd/system"
SOCKET = os.path.join(RUNTIME if USER else "/run", "llm-sandbox", "mcp.sock")
HTTP_PORT = 8765
PROTOCOL = "2025-06-18"
BOMB = ("x = bytearray(1024**3)\nfor i in range(0, len(x), 4096): x[i] = 1\n"
        "print('survived', len(x))")
SLOW = float(os.environ.get("SBX_TEST_SLOWNESS", "1"))

pytestmark = pytest.mark.skipif(not os.path.isdir(UNITS), reason="no %s" % UNITS)


def systemctl(*args, check=True):
    env = dict(os.environ, XDG_RUNTIME_DIR=RUNTIME)
    p = subprocess.run(SYSTEMCTL + list(args), capture_output=True, text=True, env=env)
    if check:
        assert p.returncode == 0, (args, p.stdout, p.stderr)
    return p.stdout.strip()


@pytest.fixture(scope="module")
def units():
    os.makedirs(UNIT_DIR, exist_ok=True)
    names = ["llm-sandbox.socket", "llm-sandbox-socket.service"]
    if not USER:
        names.append("llm-sandbox.service")
    for n in names:
        shutil.copy(os.path.join(UNITS, n), os.path.join(UNIT_DIR, n))
    systemctl("daemon-reload")
    yield names
    systemctl("stop", *names, check=False)
    for n in names:
        os.unlink(os.path.join(UNIT_DIR, n))
    systemctl("daemon-reload")


class SocketClient:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(300)
        self.sock.connect(path)
        self.buf = b""

    def request(self, rid, method, params):
        self.sock.sendall(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method,
                                      "params": params}).encode() + b"\n")
        while True:
            while b"\n" not in self.buf:
                chunk = self.sock.recv(65536)
                assert chunk, "the server closed the connection"
                self.buf += chunk
            line, self.buf = self.buf.split(b"\n", 1)
            msg = json.loads(line)
            if msg.get("id") == rid:
                return msg

    def notify(self, method):
        self.sock.sendall(json.dumps({"jsonrpc": "2.0", "method": method}).encode() + b"\n")


def init_params():
    return {"protocolVersion": PROTOCOL, "capabilities": {},
            "clientInfo": {"name": "vm-test_units", "version": "1"}}


def bomb_call():
    return {"name": "execute_code", "arguments": {"code": BOMB, "memory": "128M", "timeout": 60}}


def assert_oom(msg):
    res = msg["result"]["structuredContent"]
    assert "survived" not in res["stdout"], res
    assert res["status"] == "oom" and res["limit"] == "memory", res
    assert res["warnings"] == [], res


def wait_for(pred, what, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.2)
    pytest.fail("%s within %.0f s" % (what, timeout))


def unit_cgroup(unit):
    return "/sys/fs/cgroup" + systemctl("show", "-P", "ControlGroup", unit)


def sandbox_groups(cg):
    """{name: [pids]} of the sandbox groups under the unit's cgroup cg."""
    top = os.path.join(cg, "llm-sandbox")
    out = {}
    for d in os.listdir(top) if os.path.isdir(top) else []:
        procs = os.path.join(top, d, "cgroup.procs")
        if os.path.isfile(procs):
            with open(procs) as f:
                out[d] = f.read().split()
    return out


def assert_only_the_leaf(unit):
    """The server moved itself into the leaf; no finished run's group is
    left. The groups still there are the pool's ready sandboxes (the server
    keeps a few booted ahead), each holding its agent: an empty one is a
    run's group that was not removed (bounded wait: removal follows the
    run's end by a moment)."""
    cg = unit_cgroup(unit)
    deadline = time.monotonic() + 10 * SLOW
    while True:
        empty = [d for d, pids in sandbox_groups(cg).items() if not pids]
        if not empty or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert empty == [], ("empty sandbox groups left", sandbox_groups(cg))
    with open(os.path.join(cg, "cgroup.procs")) as f:
        assert f.read().split() == [], "processes left in the unit's own cgroup"
    with open(os.path.join(cg, "supervisor", "cgroup.procs")) as f:
        assert f.read().split(), "the server is not in its leaf"


def test_socket_unit(units):
    systemctl("start", "llm-sandbox.socket")
    wait_for(lambda: os.path.exists(SOCKET), "the socket at %s" % SOCKET, 30 * SLOW)
    c = SocketClient(SOCKET)  # starts llm-sandbox-socket.service
    assert c.request(1, "initialize", init_params())["result"]["protocolVersion"] == PROTOCOL
    c.notify("notifications/initialized")
    assert_oom(c.request(2, "tools/call", bomb_call()))
    assert systemctl("is-active", "llm-sandbox-socket.service") == "active"
    assert_only_the_leaf("llm-sandbox-socket.service")
    c.sock.close()
    systemctl("stop", "llm-sandbox-socket.service", "llm-sandbox.socket")


def http_post(msg, headers):
    conn = http.client.HTTPConnection("127.0.0.1", HTTP_PORT, timeout=300)
    try:
        conn.request("POST", "/mcp", json.dumps(msg).encode(), dict({
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream"}, **headers))
        resp = conn.getresponse()
        body = resp.read().decode()
        if resp.headers.get("Content-Type", "").startswith("text/event-stream"):
            data = [l[5:].strip() for l in body.splitlines() if l.startswith("data:")]
            body = data[-1] if data else ""
        return resp.status, resp.headers, json.loads(body) if body else None
    finally:
        conn.close()


@pytest.mark.skipif(USER, reason="llm-sandbox.service is installed as a system unit only")
def test_http_service(units):
    systemctl("start", "llm-sandbox.service")

    def listening():
        s = socket.socket()
        try:
            return s.connect_ex(("127.0.0.1", HTTP_PORT)) == 0
        finally:
            s.close()

    wait_for(listening, "llm-sandbox.service listening on port %d" % HTTP_PORT, 60 * SLOW)
    status, headers, body = http_post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                       "params": init_params()}, {})
    assert status == 200, (status, body)
    h = {"Mcp-Session-Id": headers["Mcp-Session-Id"], "MCP-Protocol-Version": PROTOCOL}
    assert http_post({"jsonrpc": "2.0", "method": "notifications/initialized"}, h)[0] == 202
    status, _, body = http_post({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                 "params": bomb_call()}, h)
    assert status == 200, body
    assert_oom(body)
    assert systemctl("is-active", "llm-sandbox.service") == "active", \
        "the sandbox's OOM kill stopped the service"
    assert_only_the_leaf("llm-sandbox.service")
    systemctl("stop", "llm-sandbox.service")


@pytest.mark.skipif(USER, reason="a system service")
def test_oom_in_a_service_without_delegate():
    """A service without Delegate=yes: nothing is written into its cgroup
    (the limits fall back to rlimits), and when the kernel OOM-kills the
    program there (the unit's own MemoryMax=), systemd's default
    OOMPolicy=stop stops the unit, which cancels the run: it is reported
    oom, saying why, not cancelled."""
    code = "x = bytearray(300 * 1024**2)\nfor i in range(0, len(x), 4096): x[i] = 1\n" \
           "print('survived')"
    p = subprocess.run(["systemd-run", "--quiet", "--wait", "--pipe", "--collect",
                        "-p", "MemoryMax=150M", "-p", "MemorySwapMax=0",
                        os.path.join(BUILD, "bin", "llm-sandbox"), "run", "--json",
                        "--timeout", "120", "--code", code],
                       capture_output=True, text=True, timeout=600 * SLOW)
    lines = p.stdout.strip().splitlines()
    assert lines, (p.returncode, p.stderr)
    res = json.loads(lines[-1])
    assert "survived" not in res["stdout"], res
    assert res["status"] == "oom" and res["limit"] == "memory", res
    assert any("OOM killer" in w for w in res["warnings"]), res
    assert any("memory limit enforced by a fallback" in w for w in res["warnings"]), res
