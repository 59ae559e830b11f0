# SPDX-License-Identifier: MIT
"""Sandbox sessions belong to the MCP session that made them: over
Streamable HTTP, two clients (two Mcp-Session-Ids) of one server, as raw
POSTs. The second cannot list, call, read, write or close the first's
sandbox session; each refusal is the very answer an id that never existed
gets; ids carry 128 random bits; ending the MCP session (DELETE) closes
its sandbox sessions, watched through /proc.

    /usr/bin/python3 -m pytest -q -rs tests/mcp/test_session_owner.py

SBX_BIN names the binary (ctest sets it).
"""
import copy
import http.client
import json
import os
import re
import time
import urllib.parse

import pytest

from mcptest import SBX_BIN, SIGTERM_EXIT, HttpUnavailable, ProcWatch, start_http, stop_http

PROTOCOL = "2025-06-18"

pytestmark = pytest.mark.skipif(not os.access(SBX_BIN, os.X_OK),
                                reason="no llm-sandbox binary at %s (build first)" % SBX_BIN)


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


def request(url, method, path_headers=None, body=None):
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
    try:
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"}
        headers.update(path_headers or {})
        conn.request(method, u.path, json.dumps(body).encode() if body else None, headers)
        resp = conn.getresponse()
        return resp.status, resp.headers, resp.read()
    finally:
        conn.close()


class Client:
    """One MCP client over HTTP: its own initialize, its own session."""

    def __init__(self, url):
        self.url, self.next_id = url, 0
        status, headers, body = request(url, "POST", {}, {
            "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": PROTOCOL, "capabilities": {},
                "clientInfo": {"name": "owner-test", "version": "1"}}})
        assert status == 200, (status, body)
        self.session = headers["Mcp-Session-Id"]
        assert self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})[0] == 202

    def post(self, msg):
        return request(self.url, "POST", {"Mcp-Session-Id": self.session,
                                          "MCP-Protocol-Version": PROTOCOL}, msg)

    def rpc(self, method, params):
        self.next_id += 1
        status, headers, body = self.post({"jsonrpc": "2.0", "id": self.next_id,
                                           "method": method, "params": params})
        assert status == 200, (status, body)
        if headers.get("Content-Type", "").startswith("text/event-stream"):
            msgs = [json.loads(line[5:]) for line in body.decode().splitlines()
                    if line.startswith("data:")]
            body = json.dumps([m for m in msgs if m.get("id") == self.next_id][0]).encode()
        msg = json.loads(body)
        assert msg["id"] == self.next_id, msg
        return msg

    def tool(self, name, args):
        msg = self.rpc("tools/call", {"name": name, "arguments": args})
        assert "result" in msg, msg
        return msg["result"]

    def delete(self):
        return request(self.url, "DELETE", {"Mcp-Session-Id": self.session})[0]


def refusal(result, sid):
    """A refused call's message with the session id and the time it took
    taken out, so the answer for another client's id and for an absent one
    can be compared (under ASan one took 1 ms and the other 0)."""
    assert result["isError"], result
    result = copy.deepcopy(result)
    (result.get("structuredContent") or {}).pop("duration_ms", None)
    return json.dumps(result).replace(sid, "ID")


def test_http_sessions_belong_to_the_client_that_made_them(http_server):
    _proc, url = http_server
    a, b = Client(url), Client(url)
    created = a.tool("create_session", {"language": "python"})
    assert not created["isError"], created
    sid = created["structuredContent"]["session_id"]
    # 128 random bits or more: "s-" and at least 32 hex digits
    assert re.fullmatch(r"s-[0-9a-f]{32,}", sid), sid
    absent = "s-" + "0" * (len(sid) - 2)
    assert not a.tool("execute_code", {"session_id": sid, "code": "secret = 42"})["isError"]
    assert not a.tool("upload_file", {"session_id": sid, "path": "f.txt",
                                      "content": "mine"})["isError"]

    # b sees none of it
    assert b.tool("list_sessions", {})["structuredContent"]["sessions"] == []
    listed = a.tool("list_sessions", {})["structuredContent"]["sessions"]
    assert [s["session_id"] for s in listed] == [sid]
    calls = [
        ("execute_code", {"code": "print(secret)"}),
        ("upload_file", {"path": "f.txt", "content": "theirs"}),
        ("download_file", {"path": "f.txt"}),
        ("list_files", {}),
        ("close_session", {}),
    ]
    for name, args in calls:
        theirs = b.tool(name, dict(args, session_id=sid))
        never = b.tool(name, dict(args, session_id=absent))
        assert refusal(theirs, sid) == refusal(never, absent), (name, theirs, never)
    for uri_id in (sid, absent):
        msg = b.rpc("resources/read", {"uri": "sandbox://sessions/%s/files/f.txt" % uri_id})
        assert "error" in msg and msg["error"]["message"] == "resource not found", msg

    # and a's session is untouched
    out = a.tool("execute_code", {"session_id": sid, "code": "print(secret)"})
    assert out["structuredContent"]["stdout"] == "42\n", out
    down = a.tool("download_file", {"session_id": sid, "path": "f.txt"})
    assert down["structuredContent"]["content"] == "mine", down
    msg = a.rpc("resources/read", {"uri": "sandbox://sessions/%s/files/f.txt" % sid})
    assert msg["result"]["contents"][0]["text"] == "mine", msg
    assert not a.tool("close_session", {"session_id": sid})["isError"]


def test_ending_the_mcp_session_closes_its_sandbox_sessions(http_server):
    proc, url = http_server
    watch = ProcWatch(proc.pid)
    try:
        a, b = Client(url), Client(url)
        kept = b.tool("create_session", {"language": "python"})["structuredContent"]["session_id"]
        sid = a.tool("create_session", {"language": "python"})["structuredContent"]["session_id"]
        assert not a.tool("execute_code", {"session_id": sid, "code": "x = 1"})["isError"]
        watch.poll()
        before = set(watch.alive())
        assert before, "no sandbox process seen for the sessions"
        assert a.delete() == 200
        # a's sandbox is gone: fewer processes, and b's session still answers
        for _ in range(500):
            if set(watch.alive()) < before:
                break
            watch.poll()
            time.sleep(0.02)
        assert set(watch.alive()) < before, (before, watch.alive())
        out = b.tool("execute_code", {"session_id": kept, "code": "print(7)"})
        assert out["structuredContent"]["stdout"] == "7\n", out
        assert b.delete() == 200
        assert watch.wait_gone(30) is not None, watch.alive()
    finally:
        watch.stop()


def test_run_artifacts_belong_to_the_client_that_made_them(http_server):
    """A one-shot run's kept files (sandbox://runs/ID/files/PATH) are the
    client's that ran it: another client's resources/read gets exactly the
    answer a run id that never existed gets. Run ids carry 128 bits."""
    _proc, url = http_server
    a, b = Client(url), Client(url)
    ran = a.tool("execute_code", {"code": "open('secret.txt', 'w').write('mine')"})
    assert not ran["isError"], ran
    uri = ran["structuredContent"]["artifacts"][0]["uri"]
    m = re.fullmatch(r"sandbox://runs/([0-9a-f]+)/files/secret\.txt", uri)
    assert m and len(m.group(1)) >= 32, uri
    mine = a.rpc("resources/read", {"uri": uri})
    assert mine["result"]["contents"][0]["text"] == "mine", mine
    absent = uri.replace(m.group(1), "0" * len(m.group(1)))
    theirs = b.rpc("resources/read", {"uri": uri})
    never = b.rpc("resources/read", {"uri": absent})
    assert "error" in theirs, theirs
    strip = lambda msg, u: json.dumps({k: v for k, v in msg.items() if k != "id"}).replace(u, "U")
    assert strip(theirs, uri) == strip(never, absent), (theirs, never)
