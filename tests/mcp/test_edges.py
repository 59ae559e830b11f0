# SPDX-License-Identifier: MIT
"""The protocol's edges (issue 24), each through the real server: graceful
shutdown on a signal over Streamable HTTP (stdio: test_protocol.py; the
unix socket: tests/integration/test_socket.py; the TypeScript SDK client:
client.mjs), NUL bytes refused by name where C strings would cut them
short and carried intact in stdin and file contents, protocol revision
2024-11-05 on stdio, output schemas and annotations, CORS and the 401.

    SBX_BIN=build/bin/llm-sandbox /usr/bin/python3 -m pytest -q -rs tests/mcp/test_edges.py
"""
import base64
import http.client
import json
import os
import signal
import threading
import time
import urllib.parse

import pytest

from mcptest import (SBX_BIN, SIGTERM_EXIT, HttpUnavailable, ProcWatch, Server, clean_env,
                     start_http, stop_http)

INVALID_REQUEST, INVALID_PARAMS = -32600, -32602

pytestmark = pytest.mark.skipif(not os.access(SBX_BIN, os.X_OK),
                                reason="no llm-sandbox binary at %s (build first)" % SBX_BIN)


@pytest.fixture(scope="module")
def server():
    s = Server()
    s.initialize()
    yield s
    assert s.finish() == 0
    assert s.bad_lines == []


def structured(r):
    return r["result"]["structuredContent"]


# ---- NUL bytes ---------------------------------------------------------------


@pytest.mark.parametrize("args,name", [
    ({"code": "print(1)\u0000print(2)"}, "code"),
    ({"code": "print(1)", "language": "python\u0000js"}, "language"),
    ({"code": "print(1)", "libraries": ["six\u0000evil"]}, "libraries"),
    ({"code": "print(1)", "session_id": "s-1\u0000"}, "session_id"),
    ({"code": "print(1)", "network": "off\u0000"}, "network"),
], ids=["code", "language", "library", "session_id", "network"])
def test_nul_in_an_argument_is_refused_by_name(server, args, name):
    """Never cut short at the NUL (code used to run as `print(1)`): a
    refused result naming the argument, nothing run."""
    r = server.call_tool("execute_code", args)
    s = structured(r)
    assert r["result"]["isError"] is True and s["status"] == "refused", r
    assert "'%s'" % name in s["message"] and "NUL" in s["message"], s["message"]
    assert s["stdout"] == "" and s["exit_code"] is None, s


@pytest.mark.parametrize("tool,args,name", [
    ("create_session", {"language": "python\u0000"}, "language"),
    ("create_session", {"language": "python", "libraries": ["a\u0000b"]}, "libraries"),
    ("download_file", {"session_id": "x", "path": "a\u0000b"}, "path"),
    ("close_session", {"session_id": "x\u0000y"}, "session_id"),
], ids=["create-language", "create-library", "download-path", "close-id"])
def test_nul_in_a_session_tool_argument_is_refused_by_name(server, tool, args, name):
    r = server.call_tool(tool, args)
    text = r["result"]["content"][0]["text"]
    assert r["result"]["isError"] is True, r
    assert "'%s'" % name in text and "NUL" in text, text


def test_nul_in_stdin_and_file_contents_is_carried_intact(server):
    """stdin and file contents are bytes, by length: every NUL arrives."""
    code = ("import sys\n"
            "d = sys.stdin.buffer.read()\n"
            "f = open('blob.bin', 'rb').read()\n"
            "print(len(d), d.count(b'\\0'), len(f), f.count(b'\\0'), f.endswith(b'tail'))\n")
    r = server.call_tool("execute_code", {"code": code, "stdin": "a\u0000b\u0000\u0000c",
                                          "files": {"blob.bin": "\u0000x\u0000tail"}})
    s = structured(r)
    assert s["status"] == "ok", s
    assert s["stdout"] == "6 3 7 2 True\n", s


def test_nul_in_upload_file_content_is_carried_intact(server):
    r = server.call_tool("create_session", {"language": "python"})
    sid = structured(r)["session_id"]
    try:
        r = server.call_tool("upload_file", {"session_id": sid, "path": "n.bin",
                                             "content": "a\u0000b\u0000"})
        assert r["result"]["isError"] is False and structured(r)["size"] == 4, r
        r = server.call_tool("execute_code", {"session_id": sid, "code":
                                              "print(open('n.bin','rb').read() == b'a\\0b\\0')"})
        assert structured(r)["stdout"] == "True\n", structured(r)
    finally:
        server.call_tool("close_session", {"session_id": sid})


def test_nul_in_an_object_key_is_refused(server):
    """json-c keeps keys as C strings: "i\\u0000d" would read as "id"."""
    for msg in [{"jsonrpc": "2.0", "id": 70, "method": "ping", "params": {"x\u0000y": 1}},
                {"jsonrpc": "2.0", "id": 71, "method": "tools/call", "params": {
                    "name": "execute_code",
                    "arguments": {"code": "print(1)", "files": {"a\u0000.py": "x"}}}}]:
        server.send(msg)
        err = server.response(msg["id"], timeout=10)
        assert err["error"]["code"] == INVALID_REQUEST, err
        assert "key" in err["error"]["message"] and "NUL" in err["error"]["message"], err


def test_nul_in_an_id_or_method_or_params_is_refused(server):
    server.send({"jsonrpc": "2.0", "id": "a\u0000b", "method": "ping"})
    err = server.response("a\u0000b", timeout=10)  # echoed exactly, NUL and all
    assert err["error"]["code"] == INVALID_REQUEST and "NUL" in err["error"]["message"], err
    server.send({"jsonrpc": "2.0", "id": 72, "method": "ping\u0000x"})
    err = server.response(72, timeout=10)
    assert err["error"]["code"] == INVALID_REQUEST and "NUL" in err["error"]["message"], err
    err = server.request("resources/read", {"uri": "sandbox://languages\u0000x"})
    assert err["error"]["code"] == INVALID_PARAMS, err
    assert "params.uri" in err["error"]["message"], err
    err = server.request("tools/call", {"name": "execute_code\u0000", "arguments": {}})
    assert err["error"]["code"] == INVALID_PARAMS and "params.name" in err["error"]["message"]


# ---- graceful shutdown over Streamable HTTP ------------------------------------


def post(url, body, headers=None, timeout=60):
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        h.update(headers or {})
        conn.request("POST", u.path, json.dumps(body).encode(), h)
        resp = conn.getresponse()
        return resp.status, resp.headers, resp.read()
    finally:
        conn.close()


def sse_or_json(body):
    """The JSON-RPC messages of a POST's answer (JSON, or an event stream)."""
    text = body.decode()
    if text.lstrip().startswith("{"):
        return [json.loads(text)]
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]


def http_session(url, version="2025-06-18"):
    status, headers, body = post(url, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                       "params": {"protocolVersion": version, "capabilities": {},
                                                  "clientInfo": {"name": "t", "version": "1"}}})
    assert status == 200, body
    sid = headers["Mcp-Session-Id"]
    h = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": version}
    post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, h)
    return h


def test_http_sigterm_answers_the_call_in_flight():
    """SIGTERM: the POST whose call is running gets its answer (a cancelled
    result) before the server exits 128 + SIGTERM; the sandbox is gone."""
    try:
        proc, url = start_http()
    except HttpUnavailable as e:
        pytest.skip(str(e))
    try:
        h = http_session(url)
        watch = ProcWatch(proc.pid)
        got = {}

        def call():
            got["answer"] = post(url, {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                                       "params": {"name": "execute_code", "arguments": {
                                           "code": "while True: pass", "timeout": 120}}}, h)

        t = threading.Thread(target=call)
        t.start()
        deadline = time.monotonic() + 20
        while not watch.saw("python3"):
            assert time.monotonic() < deadline, "the sandboxed python3 never showed up"
            time.sleep(0.02)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(15)
        took = time.monotonic() - t0
        t.join(10)
        watch.stop()
        assert rc == SIGTERM_EXIT, (rc, proc.stderr.read())
        assert took < 10, "the server took %.1f s to end" % took
        assert watch.wait_gone(1.0) is not None, "left running: %s" % watch.alive()
        status, _, body = got["answer"]
        assert status == 200, (status, body)
        answer = [m for m in sse_or_json(body) if m.get("id") == 9]
        assert answer and answer[0]["result"]["structuredContent"]["status"] == "cancelled", body
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# ---- protocol revision 2024-11-05 ------------------------------------------------


def initialize(s, version):
    r = s.request("initialize", {"protocolVersion": version, "capabilities": {},
                                 "clientInfo": {"name": "old", "version": "1"}})
    s.notify("notifications/initialized")
    return r["result"]


def test_2024_11_05_is_negotiated_on_stdio():
    """A 2024-11-05 client gets its own version, not a counter-offer, and a
    tools/list without what that revision lacks (annotations, titles,
    output schemas); its calls still run."""
    s = Server()
    try:
        assert initialize(s, "2024-11-05")["protocolVersion"] == "2024-11-05"
        tools = s.request("tools/list")["result"]["tools"]
        assert tools and all(set(t) == {"name", "description", "inputSchema"} for t in tools), tools
        r = s.call_tool("execute_code", {"code": "print(6*7)"})
        assert r["result"]["content"][0]["type"] == "text" and "42" in r["result"]["content"][0]["text"]
        assert s.finish() == 0
    finally:
        s.kill()


def test_2024_11_05_is_not_offered_over_streamable_http():
    """2024-11-05 clients speak HTTP+SSE (GET /sse), which is not served:
    Streamable HTTP counter-offers its newest version instead."""
    try:
        proc, url = start_http()
    except HttpUnavailable as e:
        pytest.skip(str(e))
    try:
        status, _, body = post(url, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                     "params": {"protocolVersion": "2024-11-05", "capabilities": {},
                                                "clientInfo": {"name": "old", "version": "1"}}})
        assert status == 200, body
        assert json.loads(body)["result"]["protocolVersion"] == "2025-11-25", body
        u = urllib.parse.urlsplit(url)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
        conn.request("GET", "/sse")
        assert conn.getresponse().status == 404
        conn.close()
    finally:
        assert stop_http(proc) == SIGTERM_EXIT


# ---- HTTP: CORS, the 401, a dropped stream -----------------------------------------


def raw(url, method, headers, body=None):
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        conn.request(method, u.path, body, headers)
        resp = conn.getresponse()
        return resp.status, resp.headers, resp.read()
    finally:
        conn.close()


@pytest.fixture
def http_server():
    try:
        proc, url = start_http()
    except HttpUnavailable as e:
        pytest.skip(str(e))
    try:
        yield proc, url
        assert proc.poll() is None, "serve --http died during the test"
    finally:
        assert stop_http(proc) == SIGTERM_EXIT


def test_cors_preflight_for_loopback_origins(http_server):
    """A browser page on this machine (a local Inspector, a dev server) can
    call the server: its preflight is answered and Mcp-Session-Id is
    exposed to its script. Other origins are refused."""
    _, url = http_server
    origin = "http://localhost:6274"
    status, h, _ = raw(url, "OPTIONS", {
        "Origin": origin, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type, mcp-session-id, mcp-protocol-version"})
    assert status == 204, status
    assert h["Access-Control-Allow-Origin"] == origin, dict(h)
    assert "POST" in h["Access-Control-Allow-Methods"], dict(h)
    allowed = {x.strip().lower() for x in h["Access-Control-Allow-Headers"].split(",")}
    assert {"content-type", "mcp-session-id", "mcp-protocol-version", "authorization"} <= allowed
    status, h, body = post(url, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "browser", "version": "1"}}}, {"Origin": origin})
    assert status == 200, body
    assert h["Access-Control-Allow-Origin"] == origin, dict(h)
    assert "Mcp-Session-Id" in h["Access-Control-Expose-Headers"], dict(h)
    assert h["Mcp-Session-Id"]
    for evil in ("http://evil.example", "null", "http://localhost.evil.example"):
        status, h, _ = raw(url, "OPTIONS", {"Origin": evil,
                                            "Access-Control-Request-Method": "POST"})
        assert status == 403 and "Access-Control-Allow-Origin" not in h, (evil, status)


def test_401_says_how_to_authenticate():
    """With LLM_SANDBOX_HTTP_TOKEN, a request without it gets 401 with a
    Bearer challenge (RFC 6750) naming what to send; the preflight, which
    carries no credentials, still passes; the token lets the client in."""
    env = clean_env()
    env["LLM_SANDBOX_HTTP_TOKEN"] = "s3cret-token-for-the-test"
    try:
        proc, url = start_http(env=env)
    except HttpUnavailable as e:
        pytest.skip(str(e))
    try:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}
        status, h, _ = post(url, init)
        assert status == 401, status
        challenge = h["WWW-Authenticate"]
        assert challenge.startswith("Bearer ") and 'realm="llm-sandbox"' in challenge, challenge
        assert "Authorization: Bearer" in challenge, challenge
        status, _, _ = raw(url, "OPTIONS", {"Origin": "http://127.0.0.1:3000",
                                            "Access-Control-Request-Method": "POST"})
        assert status == 204
        status, _, _ = post(url, init, {"Authorization": "Bearer s3cret-token-for-the-test"})
        assert status == 200
    finally:
        assert stop_http(proc) == SIGTERM_EXIT


def test_readme_shows_each_client_passing_a_bearer_header():
    """No OAuth here: the README shows the exact static-header setting of
    Claude Code, VS Code and Cursor."""
    readme = open(os.path.join(os.path.dirname(__file__), "..", "..", "README.md")).read()
    section = readme[readme.index("LLM_SANDBOX_HTTP_TOKEN"):]
    assert '--header "Authorization: Bearer' in section  # Claude Code
    assert '"headers": { "Authorization": "Bearer ${input:llm-sandbox-token}" }' in section
    assert '"headers": { "Authorization": "Bearer ${env:LLM_SANDBOX_HTTP_TOKEN}" }' in section


@pytest.mark.parametrize("stream", [True, False], ids=["event-stream", "json"])
def test_a_dropped_response_cancels_its_call(http_server, stream):
    """The client drops the connection of a running call (its event stream,
    or the JSON answer it waits for): the call is cancelled and its sandbox
    is gone promptly, not left to run to its timeout unseen."""
    proc, url = http_server
    h = http_session(url)
    watch = ProcWatch(proc.pid)
    params = {"name": "execute_code", "arguments": {
        "code": "import time\nprint('started', flush=True)\nwhile True: pass", "timeout": 120}}
    if stream:
        params["_meta"] = {"progressToken": "p1"}
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    conn.request("POST", u.path, json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                                             "params": params}).encode(),
                 dict({"Content-Type": "application/json",
                       "Accept": "application/json, text/event-stream"}, **h))
    if stream:
        resp = conn.getresponse()
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        assert resp.read(6) == b"event:"  # progress has begun
    deadline = time.monotonic() + 20
    while not watch.saw("python3"):
        assert time.monotonic() < deadline, "the sandboxed python3 never showed up"
        time.sleep(0.02)
    conn.sock.shutdown(2)
    conn.close()
    gone = watch.wait_gone(3.0)
    watch.stop()
    assert gone is not None, "still running 3 s after the stream dropped: %s" % watch.alive()
    status, _, body = post(url, {"jsonrpc": "2.0", "id": 6, "method": "ping"}, h)
    assert status == 200 and json.loads(body)["result"] == {}, body
