# SPDX-License-Identifier: MIT
"""`llm-sandbox serve --socket` and `llm-sandbox session`: the MCP server on
a unix socket, driven by a raw client (Python socket, newline-delimited
JSON-RPC) and by the session subcommands.

Every test starts its own server on a socket in its tmp_path. The session
subcommands are tested twice: against a scripted server here (what the
command sends and how it prints each answer: the contract as the command
reads it), and against the real server, skipped while the real server has
no session tools (create_session)."""
import base64
import json
import os
import signal
import socket
import stat
import shutil
import subprocess
import tempfile
import threading
import time

import pytest

import conftest
from conftest import (BACKEND, EXIT_TIMEOUT, EXIT_TOOL, ROOT, SBX_BIN, backend_controls,
                      clean_env, run_cli)

PROTOCOL = "2025-06-18"
EXIT_USAGE = 2


# --------------------------------------------------------------------------
# A server and a raw client


class Server:
    """`llm-sandbox serve --socket PATH`, its stderr in a file."""

    def __init__(self, path, args=None, extra_env=None, wait=True):
        self.path = str(path)
        self.log = tempfile.TemporaryFile()
        argv = [SBX_BIN, "serve"] + (args if args is not None else ["--socket", self.path])
        self.proc = subprocess.Popen(argv, env=clean_env(extra_env), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=self.log, cwd="/")
        conftest._cli_pids.append(self.proc.pid)  # its cgroups are checked after the test
        if wait:
            self.wait_ready()

    def wait_ready(self, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail("the server exited %s: %s" % (self.proc.returncode, self.stderr()))
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(self.path)
                return
            except OSError:
                time.sleep(0.02)
            finally:
                s.close()
        pytest.fail("the server did not listen on %s within %ss: %s"
                    % (self.path, timeout, self.stderr()))

    def stderr(self):
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail("the server did not stop within %ss of signal %d: %s"
                        % (timeout, sig, self.stderr()))
        finally:
            self.log.close()


@pytest.fixture
def server(tmp_path):
    s = Server(tmp_path / "s.sock")
    yield s
    rc = s.stop()
    assert rc == 128 + signal.SIGTERM, (rc, s.stderr() if not s.log.closed else "")


class Conn:
    """One MCP connection: newline-delimited JSON-RPC on the socket."""

    def __init__(self, path, timeout=60):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(str(path))
        self.buf = b""
        self.next_id = 1

    def close(self):
        self.sock.close()

    def send_raw(self, data):
        self.sock.sendall(data)

    def send(self, msg):
        self.send_raw(json.dumps(msg).encode() + b"\n")

    def recv(self):
        """The next message, or None at the end of the connection."""
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def answer(self, rid):
        """The response to request rid, skipping notifications."""
        while True:
            m = self.recv()
            assert m is not None, "the server closed the connection before answering %r" % rid
            if m.get("id") == rid and ("result" in m or "error" in m):
                return m

    def start(self, method, params=None):
        rid = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return rid

    def request(self, method, params=None):
        return self.answer(self.start(method, params))

    def initialize(self):
        r = self.request("initialize", {"protocolVersion": PROTOCOL, "capabilities": {},
                                        "clientInfo": {"name": "test_socket", "version": "1"}})
        assert r["result"]["protocolVersion"] == PROTOCOL, r
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return r["result"]

    def call(self, tool, args):
        r = self.request("tools/call", {"name": tool, "arguments": args})
        assert "result" in r, r
        return r["result"]


def connect(path):
    c = Conn(path)
    c.initialize()
    return c


# --------------------------------------------------------------------------
# The transport


def test_raw_client_initializes_lists_tools_and_runs_code(server):
    c = connect(server.path)
    try:
        tools = c.request("tools/list")["result"]["tools"]
        assert "execute_code" in [t["name"] for t in tools], tools
        res = c.call("execute_code", {"code": "print(6*7)"})
        assert res["isError"] is False, res
        assert res["structuredContent"]["stdout"] == "42\n", res
    finally:
        c.close()


def test_socket_is_private(tmp_path):
    path = tmp_path / "fresh" / "s.sock"
    s = Server(path)
    try:
        st = os.lstat(str(path))
        assert stat.S_ISSOCK(st.st_mode)
        assert stat.S_IMODE(st.st_mode) == 0o600, oct(st.st_mode)
        assert st.st_uid == os.geteuid()
        d = os.stat(str(tmp_path / "fresh"))
        assert stat.S_IMODE(d.st_mode) == 0o700, oct(d.st_mode)  # created for the socket
    finally:
        assert s.stop() == 128 + signal.SIGTERM


def test_two_connections_at_once(server):
    a, b = connect(server.path), connect(server.path)
    try:
        # both calls in flight before either answer is read
        ra = a.start("tools/call", {"name": "execute_code",
                                    "arguments": {"code": "import time; time.sleep(0.5); print('a')"}})
        rb = b.start("tools/call", {"name": "execute_code", "arguments": {"code": "print('b')"}})
        res_b = b.answer(rb)["result"]
        res_a = a.answer(ra)["result"]
        assert res_a["structuredContent"]["stdout"] == "a\n", res_a
        assert res_b["structuredContent"]["stdout"] == "b\n", res_b
    finally:
        a.close()
        b.close()


def test_each_connection_has_its_own_handshake(server):
    a = connect(server.path)
    b = Conn(server.path)
    try:
        r = b.request("tools/list")  # b never initialized
        assert "error" in r, r
        assert a.request("tools/list")["result"]["tools"], "a is initialized"
    finally:
        a.close()
        b.close()


def test_garbage_gets_errors_and_the_server_keeps_serving(server):
    bystander = connect(server.path)
    c = connect(server.path)
    try:
        c.send_raw(b"this is not json\n")
        m = c.recv()
        assert m["error"]["code"] == -32700 and m["id"] is None, m
        c.send_raw(b"\xff\xfe{\"jsonrpc\": \"2.0\"}\n")
        m = c.recv()
        assert "error" in m and m["id"] is None, m
        c.send_raw(b"[]\n   \n{\"jsonrpc\":\"2.0\",\"id\":\"x\"}\n")
        m = c.recv()
        assert m["error"]["code"] == -32600, m
        m = c.recv()
        assert "error" in m, m
        # the connection still answers, and so does the other one
        assert c.request("tools/list")["result"]["tools"]
        assert bystander.request("tools/list")["result"]["tools"]
    finally:
        c.close()
        bystander.close()


def test_oversized_line_is_refused_and_skipped(server):
    c = connect(server.path)
    try:
        c.send_raw(b"a" * (4 * 1024 * 1024 + 100) + b"\n")
        m = c.recv()
        assert m["error"]["code"] == -32600 and "too large" in m["error"]["message"], m
        assert c.request("tools/list")["result"]["tools"]
    finally:
        c.close()


def test_client_hanging_up_mid_call_leaves_nothing(server):
    """The connection's calls are cancelled when it closes (the autouse
    fixture checks that no sandbox survives); the server serves on."""
    c = connect(server.path)
    c.start("tools/call", {"name": "execute_code",
                           "arguments": {"code": "import time; time.sleep(60)"}})
    time.sleep(0.5)
    c.close()
    c = connect(server.path)
    try:
        assert c.call("execute_code", {"code": "print(1)"})["structuredContent"]["stdout"] == "1\n"
    finally:
        c.close()


def test_connections_are_bounded(server):
    conns = []
    try:
        for _ in range(64):
            conns.append(connect(server.path))
        extra = Conn(server.path, timeout=10)
        m = extra.recv()
        assert m is not None and "too many connections" in m["error"]["message"], m
        assert extra.recv() is None, "then the server hangs up"
        extra.close()
        conns.pop().close()
        # the slot comes free once its thread has wound down
        deadline = time.monotonic() + 10
        while True:
            c = Conn(server.path, timeout=10)
            try:
                c.initialize()
                conns.append(c)
                break
            except (AssertionError, KeyError, TypeError, OSError):
                c.close()
                assert time.monotonic() < deadline, "no slot came free"
                time.sleep(0.05)
        assert conns[0].request("tools/list")["result"]["tools"]
    finally:
        for c in conns:
            c.close()


def test_second_server_on_the_same_path_is_refused(server):
    r = run_cli(["serve", "--socket", server.path], timeout=30)
    assert r.rc == EXIT_TOOL, r
    err = r.err.decode()
    assert "another server is listening on '%s'" % server.path in err, r
    c = connect(server.path)  # the first one is untouched
    try:
        assert c.request("tools/list")["result"]["tools"]
    finally:
        c.close()


def test_sigterm_answers_and_cancels_calls_removes_the_socket_and_exits_143(tmp_path):
    """SIGTERM: the call in flight is cancelled and still answered (a
    cancelled result) before the connection closes; the exit code is 128 +
    SIGTERM (mcp/serve.h), as a shell reports a process a signal ended."""
    s = Server(tmp_path / "s.sock")
    c = connect(s.path)
    idle = connect(s.path)
    rid = c.start("tools/call", {"name": "execute_code",
                                 "arguments": {"code": "import time; time.sleep(60)"}})
    time.sleep(0.5)
    t0 = time.monotonic()
    rc = s.stop(signal.SIGTERM)
    assert rc == 128 + signal.SIGTERM, s
    assert time.monotonic() - t0 < 15, "the call in flight was not cancelled"
    assert not os.path.exists(s.path)
    answered = None
    for conn in (c, idle):  # connections were closed
        while True:
            m = conn.recv()
            if m is None:
                break
            assert m.get("id") in (rid, None) or "method" in m, m
            if m.get("id") == rid:
                answered = m
        conn.close()
    assert answered is not None, "the call in flight got no answer"
    assert answered["result"]["structuredContent"]["status"] == "cancelled", answered


def test_2024_11_05_is_negotiated_on_the_socket(server):
    """As on stdio: a 2024-11-05 client gets its version, and tools/list
    without what that revision lacks."""
    c = Conn(server.path)
    r = c.request("initialize", {"protocolVersion": "2024-11-05", "capabilities": {},
                                 "clientInfo": {"name": "old", "version": "1"}})
    assert r["result"]["protocolVersion"] == "2024-11-05", r
    c.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    tools = c.request("tools/list")["result"]["tools"]
    assert tools and all(set(t) == {"name", "description", "inputSchema"} for t in tools), tools
    c.close()


def test_sigint_stops_it_too(tmp_path):
    s = Server(tmp_path / "s.sock")
    assert s.stop(signal.SIGINT) == 128 + signal.SIGINT
    assert not os.path.exists(s.path)


SOCKET_ACTIVATE = shutil.which("systemd-socket-activate")
needs_activate = pytest.mark.skipif(not SOCKET_ACTIVATE,
                                    reason="systemd-socket-activate is missing (package systemd)")


@needs_activate
def test_socket_activation(tmp_path):
    """Socket activation as llm-sandbox.socket does it (LISTEN_PID and
    LISTEN_FDS, sd_listen_fds(3)): the server takes the socket it is passed
    (systemd-socket-activate made it and execs the server on the first
    connection), serves it, and leaves it in place at the end."""
    s = Server.__new__(Server)  # started by systemd-socket-activate instead
    s.path = str(tmp_path / "act.sock")
    s.log = tempfile.TemporaryFile()
    s.proc = subprocess.Popen([SOCKET_ACTIVATE, "-l", s.path, SBX_BIN, "serve", "--socket"],
                              env=clean_env(), stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=s.log, cwd="/")
    conftest._cli_pids.append(s.proc.pid)  # execs the server: the same pid
    s.wait_ready()
    c = connect(s.path)
    try:
        res = c.call("execute_code", {"code": "print(6*7)"})
        assert res["structuredContent"]["stdout"] == "42\n", res
        assert "llm-sandbox: MCP on unix socket %s (from systemd)" % s.path in s.stderr()
    finally:
        c.close()
    assert s.stop() == 128 + signal.SIGTERM, s.stderr()
    assert stat.S_ISSOCK(os.lstat(s.path).st_mode), "the passed socket was removed"


@needs_activate
def test_socket_activation_wants_one_socket(tmp_path):
    """Two sockets passed (two ListenStream=): refused, said why."""
    a, b = str(tmp_path / "a.sock"), str(tmp_path / "b.sock")
    p = subprocess.Popen([SOCKET_ACTIVATE, "-l", a, "-l", b, SBX_BIN, "serve", "--socket"],
                         env=clean_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, cwd="/")
    conftest._cli_pids.append(p.pid)
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the first connection starts it
        try:
            probe.connect(a)
            break
        except OSError:
            time.sleep(0.02)
    _, err = p.communicate(timeout=60)
    probe.close()
    assert p.returncode == EXIT_TOOL, err
    assert b"socket activation passed 2 sockets" in err, err


def test_activation_variables_of_another_process_are_ignored(tmp_path):
    """LISTEN_PID naming another process (a parent's, inherited): not ours,
    so the server binds its own path as usual."""
    s = Server(tmp_path / "s.sock", extra_env={"LISTEN_PID": "1", "LISTEN_FDS": "1"})
    try:
        assert "(from systemd)" not in s.stderr()
        c = connect(s.path)
        c.close()
    finally:
        assert s.stop() == 128 + signal.SIGTERM
    assert not os.path.exists(s.path)


def test_stale_socket_file_is_replaced(tmp_path):
    path = str(tmp_path / "s.sock")
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(path)  # a socket file nobody listens on
    dead.close()
    assert stat.S_ISSOCK(os.lstat(path).st_mode)
    s = Server(path)
    try:
        c = connect(path)
        assert c.request("tools/list")["result"]["tools"]
        c.close()
        assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
    finally:
        assert s.stop() == 128 + signal.SIGTERM


def test_other_files_are_not_replaced(tmp_path):
    path = tmp_path / "s.sock"
    path.write_text("precious\n")
    r = run_cli(["serve", "--socket", str(path)], timeout=30)
    assert r.rc == EXIT_TOOL and b"is not a socket" in r.err, r
    assert path.read_text() == "precious\n"


def test_directory_open_to_others_is_refused(tmp_path):
    d = tmp_path / "open"
    d.mkdir()
    os.chmod(str(d), 0o777)
    r = run_cli(["serve", "--socket", str(d / "s.sock")], timeout=30)
    assert r.rc == EXIT_TOOL, r
    assert b"refusing to listen in '%s'" % str(d).encode() in r.err, r
    assert not os.path.exists(str(d / "s.sock"))


@pytest.mark.skipif(not ROOT, reason="needs root to connect as another user")
def test_other_users_are_turned_away():
    """Past the file modes (loosened here on purpose), SO_PEERCRED still
    refuses a peer of another uid. (Not in tmp_path: pytest's base
    directory is closed to other users.)"""
    d = tempfile.mkdtemp(prefix="sbx-socket-test-")
    s = Server(os.path.join(d, "s.sock"))
    try:
        os.chmod(d, 0o755)
        os.chmod(s.path, 0o666)
        code = ("import os, socket; os.setgid(65534); os.setuid(65534); "
                "s = socket.socket(socket.AF_UNIX); s.connect(%r); s.settimeout(10); "
                "print(s.makefile('rb').readline().decode(), end='')" % s.path)
        p = subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True, timeout=30)
        assert p.returncode == 0, p
        m = json.loads(p.stdout)
        assert "permission denied" in m["error"]["message"], m
    finally:
        assert s.stop() == 128 + signal.SIGTERM
        shutil.rmtree(d)


@pytest.mark.skipif(not ROOT, reason="needs root to listen as another user")
def test_session_refuses_a_server_of_another_user(tmp_path):
    """Where others could have made the socket (a default under /tmp), the
    client checks who listens before it sends anything."""
    path = str(tmp_path / "theirs.sock")
    code = ("import os, socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(%r); "
            "os.chmod(%r, 0o666); os.setgid(65534); os.setuid(65534); s.listen(1); "
            "print('ready', flush=True); c, _ = s.accept(); "
            "print(repr(c.recv(100)), flush=True)" % (path, path))
    p = subprocess.Popen(["/usr/bin/python3", "-c", code], stdout=subprocess.PIPE)
    try:
        assert p.stdout.readline() == b"ready\n"
        r = run_cli(["session", "list", "--socket", path])
        assert r.rc == EXIT_TOOL and b"runs as uid 65534" in r.err, r
        assert p.stdout.readline() == b"b''\n", "nothing was sent to it"
    finally:
        p.kill()
        p.wait()
        p.stdout.close()


def test_symlinked_directory_is_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    r = run_cli(["serve", "--socket", str(link / "s.sock")], timeout=30)
    assert r.rc == EXIT_TOOL and b"symbolic link" in r.err, r


def test_stdin_is_not_read_with_socket(tmp_path):
    """With --socket, end of standard input does not end the server."""
    path = str(tmp_path / "s.sock")
    log = tempfile.TemporaryFile()
    p = subprocess.Popen([SBX_BIN, "serve", "--socket", path], env=clean_env(),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, cwd="/")
    conftest._cli_pids.append(p.pid)
    try:
        p.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        p.stdin.close()
        deadline = time.monotonic() + 30
        while not os.path.exists(path):
            assert p.poll() is None and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        time.sleep(0.3)
        assert p.poll() is None, "the server read its standard input and ended"
        c = connect(path)
        c.close()
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=30) == 128 + signal.SIGTERM
        assert p.stdout.read() == b"", "nothing is answered on stdout"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stdout.close()
        log.close()


def test_http_and_socket_are_exclusive(tmp_path):
    r = run_cli(["serve", "--http", "127.0.0.1:0", "--socket", str(tmp_path / "s.sock")])
    assert r.rc == EXIT_USAGE and b"not both" in r.err, r


def test_socket_path_from_the_setting(tmp_path):
    path = str(tmp_path / "env.sock")
    s = Server(tmp_path / "x", args=["--socket"], extra_env={"LLM_SANDBOX_SOCKET": path},
               wait=False)
    s.path = path
    try:
        s.wait_ready()
        connect(path).close()
    finally:
        assert s.stop() == 128 + signal.SIGTERM


def test_socket_setting_must_be_absolute(tmp_path):
    r = run_cli(["serve", "--socket"], extra_env={"LLM_SANDBOX_SOCKET": "rel.sock"})
    assert r.rc == EXIT_TOOL and b"LLM_SANDBOX_SOCKET='rel.sock'" in r.err, r
    r = run_cli(["session", "list"], extra_env={"LLM_SANDBOX_SOCKET": "rel.sock"})
    assert r.rc == EXIT_TOOL and b"LLM_SANDBOX_SOCKET='rel.sock'" in r.err, r


@pytest.mark.skipif(ROOT, reason="as root the default is /run/llm-sandbox/mcp.sock")
def test_default_path_under_xdg_runtime_dir(tmp_path):
    xdg = tmp_path / "xdg"
    xdg.mkdir(mode=0o700)
    path = str(xdg / "llm-sandbox" / "mcp.sock")
    r = run_cli(["session", "list"], extra_env={"XDG_RUNTIME_DIR": str(xdg)})
    assert r.rc == EXIT_TOOL and path.encode() in r.err, r
    s = Server(tmp_path / "x", args=["--socket"], extra_env={"XDG_RUNTIME_DIR": str(xdg)},
               wait=False)
    s.path = path
    try:
        s.wait_ready()
        assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    finally:
        assert s.stop() == 128 + signal.SIGTERM


def test_session_without_a_server_says_so(tmp_path):
    path = str(tmp_path / "nobody.sock")
    for args in (["list"], ["create", "-l", "python"], ["exec", "abc", "-c", "print(1)"],
                 ["close", "abc"], ["files", "abc"], ["download", "abc", "x"]):
        r = run_cli(["session"] + args + ["--socket", path])
        assert r.rc == EXIT_TOOL, r
        err = r.err.decode()
        assert "cannot connect" in err and path in err, r
        assert "llm-sandbox serve --socket" in err, r
        assert r.out == b"", r
    r = run_cli(["session", "list"], extra_env={"LLM_SANDBOX_SOCKET": path})
    assert r.rc == EXIT_TOOL and path.encode() in r.err, r


def test_session_usage_errors():
    r = run_cli(["session"])
    assert r.rc == EXIT_USAGE and b"usage: llm-sandbox session" in r.err, r
    r = run_cli(["session", "--help"])
    assert r.rc == 0 and b"upload ID PATH" in r.out, r
    for sub in ("create", "exec", "close", "list", "upload", "download", "files"):
        r = run_cli(["session", sub, "--help"])
        assert r.rc == 0 and ("llm-sandbox session %s" % sub).encode() in r.out, r
    for args in (["create"], ["exec"], ["close"], ["close", "a", "b"], ["upload", "a"],
                 ["frobnicate"], ["list", "--code", "x"], ["create", "-l", "python", "-t", "0"],
                 ["create", "-l", "python", "--memory", "lots"]):
        r = run_cli(["session"] + args + ["--socket", "/nonexistent/s.sock"])
        assert r.rc == EXIT_USAGE, r


# --------------------------------------------------------------------------
# The session subcommands against a scripted server: what they send, and
# how they print what comes back.


class ScriptedServer:
    """Speaks MCP on a unix socket with in-memory sessions; records every
    tools/call."""

    def __init__(self, path, sessions=True):
        self.path = str(path)
        self.with_sessions = sessions
        self.calls = []
        self.sessions = {}
        self.lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.lsock.bind(self.path)
        self.lsock.listen(8)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def close(self):
        self.lsock.shutdown(socket.SHUT_RDWR)
        self.lsock.close()
        self.thread.join(5)

    def _serve(self):
        while True:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            with c:
                f = c.makefile("rwb")
                for line in f:
                    msg = json.loads(line)
                    if "id" not in msg:
                        continue
                    out = {"jsonrpc": "2.0", "id": msg["id"]}
                    if msg["method"] == "initialize":
                        assert msg["params"]["protocolVersion"] == PROTOCOL
                        out["result"] = {"protocolVersion": PROTOCOL, "capabilities": {},
                                         "serverInfo": {"name": "scripted", "version": "0"}}
                    elif msg["method"] == "tools/call":
                        name, args = msg["params"]["name"], msg["params"]["arguments"]
                        self.calls.append((name, args))
                        # a notification first, which the client must skip
                        f.write(b'{"jsonrpc":"2.0","method":"notifications/message",'
                                b'"params":{"level":"info","data":"x"}}\n')
                        if self.with_sessions:
                            out["result"] = getattr(self, "t_" + name)(args)
                        else:  # as server.c answers a tool it does not have
                            out["error"] = {"code": -32602, "message": "unknown tool"}
                    else:
                        out["error"] = {"code": -32601, "message": "method not found"}
                    f.write(json.dumps(out).encode() + b"\n")
                    f.flush()

    @staticmethod
    def ok(sc):
        return {"content": [{"type": "text", "text": json.dumps(sc)}], "structuredContent": sc,
                "isError": False}

    @staticmethod
    def fail(message):
        return {"content": [{"type": "text", "text": message}],
                "structuredContent": {"message": message}, "isError": True}

    def t_create_session(self, a):
        sid = "s%d" % (len(self.sessions) + 1)
        self.sessions[sid] = {"language": a["language"], "files": {}}
        return self.ok({"session_id": sid, "language": a["language"]})

    def t_close_session(self, a):
        if self.sessions.pop(a["session_id"], None) is None:
            return self.fail("unknown session '%s'" % a["session_id"])
        return self.ok({"session_id": a["session_id"], "closed": True})

    def t_list_sessions(self, a):
        return self.ok({"sessions": [
            {"session_id": sid, "language": s["language"], "backend": "bwrap",
             "created_at": "2025-01-01T00:00:00Z", "last_used_at": 1735689600, "calls": 2,
             "busy": False} for sid, s in self.sessions.items()]})

    def t_execute_code(self, a):
        if a["session_id"] not in self.sessions:
            return self.fail("unknown session '%s'" % a["session_id"])
        code = a["code"]
        ex = {"status": "ok", "exit_code": 0, "limit": None, "stdout": "ran: %s\n" % code,
              "stderr": "", "stdout_truncated": False, "stderr_truncated": False,
              "stdout_bytes": 0, "stderr_bytes": 0, "duration_ms": 1, "backend": "bwrap",
              "language": "python", "message": None, "artifacts": [], "warnings": []}
        if code == "exit 3":
            ex.update(status="error", exit_code=3, stdout="", stderr="boom\n")
        elif code == "sleep":
            ex.update(status="timeout", exit_code=None, limit="wall_time", stdout="")
        elif code == "plot":
            ex["artifacts"] = [{"path": "figure-001.png", "size": 123, "mime_type": "image/png",
                                "uri": "sandbox://sessions/s1/files/figure-001.png"}]
        r = self.ok(ex)
        r["isError"] = ex["status"] != "ok"
        return r

    def t_upload_file(self, a):
        data = (base64.b64decode(a["content"]) if a["encoding"] == "base64"
                else a["content"].encode())
        self.sessions[a["session_id"]]["files"][a["path"]] = data
        return self.ok({"path": a["path"], "size": len(data)})

    def t_download_file(self, a):
        files = self.sessions[a["session_id"]]["files"]
        if a["path"] not in files:
            return self.fail("no file '%s'" % a["path"])
        data = files[a["path"]]
        try:
            return self.ok({"path": a["path"], "size": len(data), "encoding": "utf-8",
                            "content": data.decode("utf-8")})
        except UnicodeDecodeError:
            return self.ok({"path": a["path"], "size": len(data), "encoding": "base64",
                            "content": base64.b64encode(data).decode()})

    def t_list_files(self, a):
        files = self.sessions[a["session_id"]]["files"]
        return self.ok({"files": [{"path": p, "size": len(d)} for p, d in sorted(files.items())]})


@pytest.fixture
def scripted(tmp_path):
    s = ScriptedServer(tmp_path / "scripted.sock")
    yield s
    s.close()


def scli(srv, *args, **kw):
    return run_cli(["session"] + list(args) + ["--socket", srv.path], mark=False, **kw)


def test_cli_create_sends_the_contract(scripted):
    r = scli(scripted, "create", "-l", "python", "--library", "numpy", "--library", "a,b",
             "--timeout", "2.5", "--memory", "1G")
    assert r.rc == 0 and r.out == b"s1\n", r
    assert scripted.calls[-1] == ("create_session", {
        "language": "python", "libraries": ["numpy", "a", "b"], "timeout": 2.5,
        "memory_mb": 1024}), scripted.calls
    r = scli(scripted, "create", "--language", "python", "--json")
    assert r.rc == 0 and json.loads(r.out) == {"session_id": "s2", "language": "python"}, r
    assert scripted.calls[-1] == ("create_session", {"language": "python"})


def test_cli_exec_prints_like_run(scripted, tmp_path):
    scli(scripted, "create", "-l", "python")
    r = scli(scripted, "exec", "s1", "-c", "x = 1")
    assert r.rc == 0 and r.out == b"ran: x = 1\n", r
    assert scripted.calls[-1] == ("execute_code", {"session_id": "s1", "code": "x = 1"})
    prog = tmp_path / "p.py"
    prog.write_text("from file")
    inp = tmp_path / "in.txt"
    inp.write_text("input\n")
    data = tmp_path / "d.csv"
    data.write_text("a,b\n")
    r = scli(scripted, "exec", "s1", str(prog), "--timeout", "5", "--stdin", str(inp),
             "--file", "data.csv=%s" % data)
    assert r.rc == 0 and r.out == b"ran: from file\n", r
    assert scripted.calls[-1] == ("execute_code", {
        "session_id": "s1", "code": "from file", "timeout": 5, "stdin": "input\n",
        "files": {"data.csv": "a,b\n"}}), scripted.calls[-1]
    # --library (repeat, or A,B): execute_code's libraries, for the live session
    r = scli(scripted, "exec", "s1", "-c", "x = 1", "--library", "six==1.16.0",
             "--library", "a,b")
    assert r.rc == 0, r
    assert scripted.calls[-1] == ("execute_code", {
        "session_id": "s1", "code": "x = 1",
        "libraries": ["six==1.16.0", "a", "b"]}), scripted.calls[-1]
    r = scli(scripted, "exec", "s1", "-c", "x", "--library", "a,,b")
    assert r.rc == EXIT_USAGE, r
    assert b"bad value 'a,,b' for '--library' (an empty name)" in r.err, r
    r = scli(scripted, "exec", "s1", "-", input=b"from stdin")
    assert r.rc == 0 and r.out == b"ran: from stdin\n", r
    r = scli(scripted, "exec", "s1", input=b"implicit stdin")
    assert r.rc == 0 and r.out == b"ran: implicit stdin\n", r
    r = scli(scripted, "exec", "s1", "-c", "exit 3")
    # the server's info notice (as install steps are) comes first, on its own line
    assert r.rc == 3 and r.out == b"" and r.err.startswith(b"llm-sandbox: x\nboom\n"), r
    r = scli(scripted, "exec", "s1", "-c", "sleep")
    assert r.rc == EXIT_TIMEOUT and b"timeout (limit: wall_time)" in r.err, r
    r = scli(scripted, "exec", "s1", "-c", "plot")
    assert r.rc == 0 and b"wrote figure-001.png (123 bytes, image/png)" in r.err, r
    r = scli(scripted, "exec", "s1", "-c", "exit 3", "--json")
    assert r.rc == 3 and json.loads(r.out)["exit_code"] == 3, r
    r = scli(scripted, "exec", "nope", "-c", "print(1)")
    assert r.rc == EXIT_TOOL and b"unknown session 'nope'" in r.err and r.out == b"", r
    r = scli(scripted, "exec", "s1", "-c", "x", str(prog))
    assert r.rc == EXIT_USAGE, r
    binary = tmp_path / "bin"
    binary.write_bytes(b"\xff\x00")
    r = scli(scripted, "exec", "s1", "--file", "b=%s" % binary, "-c", "x")
    assert r.rc == EXIT_TOOL and b"session upload" in r.err, r


def test_cli_files_round_trip(scripted, tmp_path):
    scli(scripted, "create", "-l", "python")
    blob = bytes(range(256)) * 3
    local = tmp_path / "blob.bin"
    local.write_bytes(blob)
    r = scli(scripted, "upload", "s1", "data/blob.bin", str(local))
    assert r.rc == 0 and r.out == b"", r
    assert scripted.calls[-1][1]["encoding"] == "base64"
    assert base64.b64decode(scripted.calls[-1][1]["content"]) == blob
    r = scli(scripted, "upload", "s1", "t.txt", "-", input="héllo\n".encode())
    assert r.rc == 0, r
    assert scripted.calls[-1][1] == {"session_id": "s1", "path": "t.txt", "content": "héllo\n",
                                     "encoding": "utf-8"}
    r = scli(scripted, "download", "s1", "data/blob.bin")
    assert r.rc == 0 and r.out == blob, r
    out = tmp_path / "back.bin"
    r = scli(scripted, "download", "s1", "data/blob.bin", "-o", str(out))
    assert r.rc == 0 and r.out == b"" and out.read_bytes() == blob, r
    r = scli(scripted, "download", "s1", "t.txt")
    assert r.rc == 0 and r.out == "héllo\n".encode(), r
    r = scli(scripted, "download", "s1", "missing")
    assert r.rc == EXIT_TOOL and b"no file 'missing'" in r.err, r
    r = scli(scripted, "files", "s1")
    assert r.rc == 0 and r.out == b"data/blob.bin\nt.txt\n", r
    r = scli(scripted, "files", "s1", "data")
    assert scripted.calls[-1] == ("list_files", {"session_id": "s1", "path": "data"})


def test_cli_list_and_close(scripted):
    scli(scripted, "create", "-l", "python")
    scli(scripted, "create", "-l", "ruby")
    r = scli(scripted, "list")
    assert r.rc == 0, r
    lines = r.out.decode().splitlines()
    assert lines[0].split()[:3] == ["SESSION", "LANGUAGE", "BACKEND"], lines
    assert lines[1].split() == ["s1", "python", "bwrap", "2025-01-01T00:00:00Z",
                                "2025-01-01T00:00:00Z", "2", "no"], lines
    assert lines[2].split()[:2] == ["s2", "ruby"] and len(lines) == 3, lines
    r = scli(scripted, "list", "--json")
    assert [s["session_id"] for s in json.loads(r.out)["sessions"]] == ["s1", "s2"], r
    r = scli(scripted, "close", "s1")
    assert r.rc == 0 and r.out == b"", r
    r = scli(scripted, "close", "s1")
    assert r.rc == EXIT_TOOL and b"unknown session 's1'" in r.err, r
    r = scli(scripted, "close", "s1", "--json")
    assert r.rc == EXIT_TOOL and json.loads(r.out) == {"message": "unknown session 's1'"}, r


def test_cli_against_a_server_without_sessions(tmp_path):
    srv = ScriptedServer(tmp_path / "old.sock", sessions=False)
    try:
        r = scli(srv, "list")
        assert r.rc == EXIT_TOOL and r.out == b"", r
        assert b"unknown tool" in r.err and b"older than this command" in r.err, r
    finally:
        srv.close()


# --------------------------------------------------------------------------
# The session subcommands against the real server


@pytest.fixture
def session_server(server):
    """The real server, when it offers sessions."""
    c = connect(server.path)
    try:
        names = [t["name"] for t in c.request("tools/list")["result"]["tools"]]
    finally:
        c.close()
    if "create_session" not in names:
        pytest.skip("this server has no session tools yet (tools/list: %s)" % ", ".join(names))
    return server


def sess(srv, *args, **kw):
    return run_cli(["session"] + list(args) + ["--socket", srv.path], **kw)


def test_session_lifecycle(session_server, tmp_path):
    srv = session_server
    r = sess(srv, "create", "-l", "python")
    assert r.rc == 0, r
    sid = r.out.decode().strip()
    assert sid and r.out == (sid + "\n").encode(), r
    try:
        r = sess(srv, "exec", sid, "-c", "x = 41")
        assert r.rc == 0 and r.out == b"", r
        r = sess(srv, "exec", sid, "-c", "print(x + 1)")
        assert r.rc == 0 and r.out == b"42\n", r
        r = sess(srv, "exec", sid, "-c", "import sys; sys.exit(3)")
        assert r.rc == 3, r

        # files in, code reading them, files out: bytes survive both ways
        text = tmp_path / "in.txt"
        text.write_text("hello from the host\n")
        assert sess(srv, "upload", sid, "in.txt", str(text)).rc == 0
        blob = bytes(range(256)) * 4
        local = tmp_path / "blob.bin"
        local.write_bytes(blob)
        r = sess(srv, "upload", sid, "blob.bin", str(local))
        assert r.rc == 0, r
        r = sess(srv, "exec", sid, "-c",
                 "print(open('in.txt').read().strip())\n"
                 "data = open('blob.bin', 'rb').read()\n"
                 "n = open('out.bin', 'wb').write(data[::-1])\n")
        assert r.rc == 0 and r.out == b"hello from the host\n", r
        out = tmp_path / "out.bin"
        r = sess(srv, "download", sid, "out.bin", "-o", str(out))
        assert r.rc == 0, r
        assert out.read_bytes() == blob[::-1]
        r = sess(srv, "download", sid, "in.txt")
        assert r.rc == 0 and r.out == b"hello from the host\n", r

        r = sess(srv, "files", sid)
        assert r.rc == 0, r
        names = [os.path.basename(p) for p in r.out.decode().splitlines()]
        assert {"in.txt", "blob.bin", "out.bin"} <= set(names), r

        r = sess(srv, "list")
        assert r.rc == 0 and sid in r.out.decode() and "python" in r.out.decode(), r
        r = sess(srv, "list", "--json")
        assert sid in [s["session_id"] for s in json.loads(r.out)["sessions"]], r
    finally:
        r = sess(srv, "close", sid)
    assert r.rc == 0, r
    r = sess(srv, "exec", sid, "-c", "print(1)")
    assert r.rc != 0 and r.rc == EXIT_TOOL and r.err.strip(), r
    assert sid not in sess(srv, "list").out.decode()


def test_session_exec_installs_a_library_into_the_live_session(session_server):
    """`session exec --library` installs into the running session, as MCP's
    execute_code with a session id and libraries does: the variables stay,
    the library imports, and later calls still have it."""
    ctl = backend_controls()
    if not all(ctl[c]["level"] == "full" for c in ("network_registries", "host_mounts")):
        pytest.skip("backend %s cannot install libraries" % BACKEND)
    srv = session_server
    r = sess(srv, "create", "-l", "python")
    assert r.rc == 0, r
    sid = r.out.decode().strip()
    try:
        assert sess(srv, "exec", sid, "-c", "x = 41").rc == 0
        r = sess(srv, "exec", sid, "--library", "six==1.16.0", "-c",
                 "import six\nprint(six.__version__, x + 1)", timeout=300)
        assert r.rc == 0 and r.out == b"1.16.0 42\n", r
        r = sess(srv, "exec", sid, "-c", "import six\nprint(six.__file__)")
        assert r.rc == 0 and r.out.startswith(b"/tmp/.sbx/libs/1/"), r
        # a set that does not resolve fails the call and leaves the session
        r = sess(srv, "exec", sid, "--library", "six==0.0.1", "-c", "print(x)",
                 timeout=300)
        assert r.rc == EXIT_TOOL, r
        r = sess(srv, "exec", sid, "-c", "import six\nprint(x)")
        assert r.rc == 0 and r.out == b"41\n", r
    finally:
        sess(srv, "close", sid)


def test_session_is_shared_across_connections(session_server):
    """A session made on one connection is used from another (each CLI
    call is a connection of its own; here two raw ones as well)."""
    a, b = connect(session_server.path), connect(session_server.path)
    try:
        res = a.call("create_session", {"language": "python"})
        assert not res["isError"], res
        sid = res["structuredContent"]["session_id"]
        assert not b.call("execute_code", {"session_id": sid, "code": "y = 6 * 7"})["isError"]
        res = a.call("execute_code", {"session_id": sid, "code": "print(y)"})
        assert res["structuredContent"]["stdout"] == "42\n", res
        r = sess(session_server, "exec", sid, "-c", "print(y)")
        assert r.rc == 0 and r.out == b"42\n", r
        assert not b.call("close_session", {"session_id": sid})["isError"]
    finally:
        a.close()
        b.close()
