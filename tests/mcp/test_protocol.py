# SPDX-License-Identifier: MIT
"""Raw JSON-RPC over stdio against the real llm-sandbox binary: what a
broken, hostile or merely unusual client may send, and what sandboxed code
may print. After each, the server must still answer the next request, and
its stdout must carry nothing but JSON-RPC messages, one per line (every
line is checked by the reader in mcptest.Server). At the end, protocol
revision 2026-07-28 (the per-request _meta envelope, server/discover, the
result fields, its errors), on stdio and as raw POSTs over HTTP.

    /usr/bin/python3 -m pytest -q -rs tests/mcp/test_protocol.py

SBX_BIN names the binary (ctest sets it).
"""
import base64
import http.client
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse

import pytest

from mcptest import (SIGTERM_EXIT, SBX_BIN, HttpUnavailable, ProcWatch, Server, clean_env,
                     start_http, stop_http)

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602

pytestmark = pytest.mark.skipif(not os.access(SBX_BIN, os.X_OK),
                                reason="no llm-sandbox binary at %s (build first)" % SBX_BIN)


@pytest.fixture
def server():
    """An initialized server; afterwards: stdout held only JSON-RPC lines,
    the server still answers, and it ends with 0 when its input ends."""
    s = Server()
    try:
        s.initialize()
        yield s
        assert s.bad_lines == [], s.bad_lines
        assert_answers(s)
        assert s.finish() == 0, s.stderr.decode(errors="replace")
        assert s.bad_lines == [], s.bad_lines
    finally:
        s.kill()


def assert_answers(s):
    """The server answers a ping, and that answer is the next message."""
    id = s.request_async("ping")
    msg = s.next_message(timeout=10)
    assert msg == {"jsonrpc": "2.0", "id": id, "result": {}}, msg


def next_error(s, timeout=10):
    msg = s.next_message(timeout)
    assert "error" in msg and "result" not in msg, msg
    assert isinstance(msg["error"]["code"], int) and isinstance(msg["error"]["message"], str)
    assert msg["error"]["message"], msg
    return msg


def structured(resp):
    assert "result" in resp, resp
    return resp["result"]["structuredContent"]


# --------------------------------------------------------------------------
# Malformed input


@pytest.mark.parametrize("line", [
    b"{bad json",
    b'{"jsonrpc":"2.0","id":1,"method":"ping"',
    b'{"jsonrpc":"2.0","id":1,"method":"ping"} {"x":1}',
    b"nul\x00l",
    b"{'jsonrpc':'2.0','id':1,'method':'ping'}",
    b'{"jsonrpc":"2.0","id":1,"method":"ping",}',
], ids=["garbage", "truncated", "trailing", "nul-byte", "single-quotes", "trailing-comma"])
def test_malformed_json(server, line):
    server.send_raw(line + b"\n")
    err = next_error(server)
    assert err["error"]["code"] == PARSE_ERROR and err["id"] is None, err


@pytest.mark.parametrize("msg, code, echoed", [
    ({"jsonrpc": "1.0", "id": 2, "method": "ping"}, INVALID_REQUEST, 2),
    ({"id": 2, "method": "ping"}, INVALID_REQUEST, 2),
    ({"jsonrpc": 2.0, "id": 2, "method": "ping"}, INVALID_REQUEST, 2),
    ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}, INVALID_REQUEST, None),
    ({"jsonrpc": "2.0", "id": [1], "method": "ping"}, INVALID_REQUEST, None),
    ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, INVALID_REQUEST, None),
    ({"jsonrpc": "2.0", "id": True, "method": "ping"}, INVALID_REQUEST, None),
    ({"jsonrpc": "2.0", "id": None, "method": "ping"}, INVALID_REQUEST, None),
    ({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": [1, 2]}, INVALID_PARAMS, 3),
    ({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": "x"}, INVALID_PARAMS, 3),
    ({"jsonrpc": "2.0", "id": 4, "method": 42}, INVALID_REQUEST, 4),
    ({"jsonrpc": "2.0", "id": 5}, INVALID_REQUEST, 5),
    ({"jsonrpc": "2.0", "id": 6, "method": "ping", "result": {}}, INVALID_REQUEST, 6),
    ({"jsonrpc": "2.0", "id": "s", "method": "tools/list", "params": None}, INVALID_PARAMS, "s"),
], ids=["version-1.0", "no-version", "version-number", "id-object", "id-array", "id-float",
        "id-bool", "id-null", "params-array", "params-string", "method-number", "no-method",
        "request-with-result", "params-null"])
def test_wrong_envelope(server, msg, code, echoed):
    server.send(msg)
    err = next_error(server)
    assert err["error"]["code"] == code, err
    assert err["id"] == echoed, err


@pytest.mark.parametrize("line", [b'"a string"', b"42", b"null", b"true"])
def test_not_an_object(server, line):
    server.send_raw(line + b"\n")
    err = next_error(server)
    assert err["error"]["code"] == INVALID_REQUEST and err["id"] is None, err


def test_unknown_method(server):
    id = server.request_async("tools/frobnicate", {})
    err = next_error(server)
    assert err["error"]["code"] == METHOD_NOT_FOUND and err["id"] == id, err
    # an unknown notification gets no answer at all
    server.notify("notifications/frobnicated", {})


def test_ids_are_echoed_exactly(server):
    # (an id with a NUL byte is refused, still echoed exactly: test_edges.py)
    for id in ["x", "", "ü\u2028\u0001end", -1, 0, 2**53 + 1, 2**63 - 1, -2**63]:
        r = server.response(server.request_async("ping", id=id), timeout=10)
        assert r == {"jsonrpc": "2.0", "id": id, "result": {}}


# As sent, and as they must come back byte for byte: json-c holds every
# integer from -2^63 to 2^64-1 exactly (-0 is the integer 0).
EXACT_IDS = [b"9007199254740993", b"-9007199254740993", b"12345678901234567890",
             b"9223372036854775807", b"9223372036854775808", b"18446744073709551615",
             b"-9223372036854775808", b"0", b"-0"]


def raw_answer(s, id):
    """The stdout line that answered id, as bytes."""
    s.response(id, timeout=10)
    return next(line for line in s.raw_lines if json.loads(line).get("id") == id)


def test_large_integer_ids_come_back_byte_for_byte(server):
    for text in EXACT_IDS:
        server.send_raw(b'{"jsonrpc":"2.0","id":' + text + b',"method":"ping"}\n')
        want = b"0" if text == b"-0" else text
        assert raw_answer(server, int(text)) == \
            b'{"jsonrpc":"2.0","id":' + want + b',"result":{}}\n'


@pytest.mark.parametrize("text", [b"18446744073709551616", b"-9223372036854775809",
                                  b"123456789012345678901234567890"])
def test_integers_json_c_cannot_hold_are_refused(server, text):
    """json-c would clamp these to 2^64-1 or -2^63, and the answer would
    carry an id that was never sent: refused as a parse error, id null,
    wherever the integer is (a progressToken would go astray too)."""
    for line in [b'{"jsonrpc":"2.0","id":' + text + b',"method":"ping"}',
                 b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"progressToken":'
                 + text + b'}}}']:
        server.send_raw(line + b"\n")
        err = next_error(server)
        assert err["error"]["code"] == PARSE_ERROR and err["id"] is None, err
        assert "2^64-1" in err["error"]["message"], err
    # numbers that are not integers, and integers inside strings, are not judged
    r = server.request("ping", {"x": 1e300, "y": "18446744073709551616", "z": 1.5e-300})
    assert r["result"] == {}, r


@pytest.mark.parametrize("head, id", [
    (b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":"', 5),
    (b' { "id" : "big-1", "jsonrpc":"2.0","method":"ping","params":{"x":"', "big-1"),
    (b'{"jsonrpc":"2.0","params":{"id":3,"x":"', None),  # not the message's id
    (b'{"jsonrpc":"2.0","method":"ping","params":{"x":"', None),  # id after the cap
])
def test_oversized_line_is_skipped(server, head, id):
    """5 MB without a newline (over the 4 MiB cap), then the rest of that
    line and a valid ping: one error for the big line, with the id read
    from its start when it is there (so the client's call ends), then the
    answer."""
    chunk = b"a" * (1 << 20)
    server.send_raw(head)
    for _ in range(5):
        server.send_raw(chunk)
    err = next_error(server, timeout=30)
    assert err["error"]["code"] == INVALID_REQUEST and err["id"] == id, err
    assert "too large" in err["error"]["message"], err
    server.send_raw(b'"}}\n')
    assert_answers(server)
    # just under the cap is still read as one message
    big = server.request_async("ping", {"x": "b" * (3 << 20)})
    assert server.next_message(30) == {"jsonrpc": "2.0", "id": big, "result": {}}


def test_deeply_nested_json(server):
    deep = b"[" * 100 + b"]" * 100
    server.send_raw(b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":' + deep + b"}}\n")
    err = next_error(server)
    assert err["error"]["code"] == PARSE_ERROR and err["id"] is None, err
    assert "deep" in err["error"]["message"], err
    # 100000 levels: no stack trouble either
    server.send_raw(b"[" * 100000 + b"\n")
    assert next_error(server)["error"]["code"] == PARSE_ERROR
    # moderate nesting is fine
    shallow = json.loads("[" * 20 + "]" * 20)
    r = server.request("ping", {"x": shallow}, timeout=10)
    assert r["result"] == {}


@pytest.mark.parametrize("bad", [b"\xff\xfe", b"\xc0\xaf", b"\x80", b"\xed\xa0\x80",
                                 b"\xf4\x90\x80\x80", b"abc\xe2\x82"],
                         ids=["ff-fe", "overlong", "lone-continuation", "surrogate",
                              "above-max", "truncated"])
def test_invalid_utf8(server, bad):
    server.send_raw(b'{"jsonrpc":"2.0","id":8,"method":"ping","params":{"x":"' + bad + b'"}}\n')
    err = next_error(server)
    assert err["error"]["code"] == PARSE_ERROR and err["id"] is None, err


def test_batch_is_refused(server):
    server.send_raw(b'[{"jsonrpc":"2.0","id":9,"method":"ping"},'
                    b'{"jsonrpc":"2.0","id":10,"method":"tools/list"}]\n')
    err = next_error(server)
    assert err["error"]["code"] == INVALID_REQUEST and err["id"] is None, err
    assert "batch" in err["error"]["message"]
    server.send_raw(b"[]\n")
    assert next_error(server)["error"]["code"] == INVALID_REQUEST
    # neither element was answered: the next message is the ping's answer
    assert_answers(server)


def test_client_responses_are_ignored(server):
    server.send({"jsonrpc": "2.0", "id": 77, "result": {}})
    server.send({"jsonrpc": "2.0", "id": "r", "error": {"code": -1, "message": "no"}})
    server.send({"jsonrpc": "2.0", "id": 78, "result": {"roots": []}})
    assert_answers(server)


def test_cancel_of_unknown_request_is_ignored(server):
    server.notify("notifications/cancelled", {"requestId": 99999, "reason": "test"})
    server.notify("notifications/cancelled", {"requestId": "nope"})
    server.notify("notifications/cancelled", {"requestId": {"x": 1}})
    server.notify("notifications/cancelled", {})
    server.notify("notifications/cancelled")
    assert_answers(server)


def test_crlf_and_blank_lines(server):
    server.send_raw(b'{"jsonrpc":"2.0","id":11,"method":"ping"}\r\n')
    assert server.next_message(10) == {"jsonrpc": "2.0", "id": 11, "result": {}}
    server.send_raw(b"\n\n")  # empty lines are no messages
    assert_answers(server)


def test_whitespace_only_lines_are_ignored():
    """A line of spaces and tabs (with or without a CR) holds no message,
    just as an empty line holds none: no -32700 for it, mid-stream or as the
    last line."""
    s = Server()
    try:
        s.initialize()
        s.send_raw(b" \n\t\n \t  \t\r\n\r\n   \n")
        assert_answers(s)
        s.send_raw(b'\t{"jsonrpc":"2.0","id":13,"method":"ping"}  \r\n')
        assert s.next_message(10) == {"jsonrpc": "2.0", "id": 13, "result": {}}
        s.send_raw(b" \t ")  # cut short by the end of input
        assert s.finish() == 0
        with pytest.raises(EOFError):
            s.next_message(5)
        assert s.bad_lines == []
    finally:
        s.kill()


def test_last_message_without_newline():
    """A message cut short by end of input is still answered."""
    s = Server()
    try:
        s.initialize()
        s.send_raw(b'{"jsonrpc":"2.0","id":12,"method":"ping"}')
        assert s.finish() == 0
        assert s.next_message(5) == {"jsonrpc": "2.0", "id": 12, "result": {}}
        assert s.bad_lines == []
    finally:
        s.kill()


# --------------------------------------------------------------------------
# Lifecycle


def test_calls_before_initialize():
    s = Server()
    try:
        # ping is allowed before initialize
        assert s.request("ping", timeout=10)["result"] == {}
        for method, params in [("tools/list", None), ("resources/list", None),
                               ("tools/call", {"name": "execute_code",
                                               "arguments": {"code": "print(1)"}}),
                               ("resources/read", {"uri": "sandbox://languages"})]:
            id = s.request_async(method, params)
            err = next_error(s)
            assert err["id"] == id, err
            assert "initialize" in err["error"]["message"], err
        # a notification before initialize gets no answer
        s.notify("notifications/initialized")
        s.initialize()
        tools = s.request("tools/list", timeout=10)["result"]["tools"]
        assert "execute_code" in {t["name"] for t in tools}
        assert s.finish() == 0
        assert s.bad_lines == []
    finally:
        s.kill()


@pytest.mark.parametrize("asked, got", [("2025-06-18", "2025-06-18"),
                                        ("2025-11-25", "2025-11-25"), ("1999-01-01", "2025-11-25")])
def test_initialize_negotiates_versions(asked, got):
    """Once per connection: a second initialize is refused (-32600) and
    the version stays the one negotiated."""
    s = Server()
    try:
        err = s.request("initialize", {"capabilities": {}})
        assert err["error"]["code"] == INVALID_PARAMS, err
        params = {"protocolVersion": asked, "capabilities": {},
                  "clientInfo": {"name": "t", "version": "1"}}
        r = s.request("initialize", params)
        assert r["result"]["protocolVersion"] == got, r
        assert r["result"]["serverInfo"]["name"] == "llm-sandbox"
        assert "tools" in r["result"]["capabilities"]
        for again in (params, dict(params, protocolVersion="2025-03-26")):
            err = s.request("initialize", again)
            assert err["error"]["code"] == INVALID_REQUEST, err
            assert "already initialized" in err["error"]["message"], err
        assert s.request("tools/list")["result"]["tools"]
        assert s.finish() == 0
    finally:
        s.kill()


@pytest.mark.parametrize("method", ["tools/list", "resources/list", "resources/templates/list"])
def test_unknown_cursor_is_invalid_params(server, method):
    """Every list is one page, so no cursor is known here."""
    err = server.request(method, {"cursor": "no-such-page"})
    assert err["error"]["code"] == INVALID_PARAMS, err
    assert "cursor" in err["error"]["message"], err
    assert server.request(method, {})["result"]


STARTUP_REFUSALS = [
    # no table of backend names in the core: the plugins found are listed,
    # even those this server does not load (only its own backend)
    ({"BACKEND": "hyperlight"}, "no backend plugin named 'hyperlight' is installed here; installed: bwrap,"),
    ({"BACKEND": "nosuch"}, "no backend plugin named 'nosuch' is installed here; installed:"),
    ({"LLM_SANDBOX_DEFAULT_LANGUAGE": "cobol"}, "unknown language 'cobol'"),
    ({"SANDBOX_CPUS": "0.5", "LLM_SANDBOX_CGROUP": "off"}, "cannot enforce cpu"),
    ({"SANDBOX_PRIVILEGED": "true"}, "SANDBOX_PRIVILEGED"),
    ({"LLM_SANDBOX_LANGUAGES": "cobol"}, "LLM_SANDBOX_LANGUAGES"),
]


@pytest.mark.parametrize("env,phrase", STARTUP_REFUSALS, ids=[p[1] for p in STARTUP_REFUSALS])
def test_start_up_refuses_what_cannot_be_honoured(env, phrase):
    """A setting the server cannot honour stops it before it answers
    anyone, with the reason on stderr and nothing on stdout; the same
    server starts without it (the positive control)."""
    init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                  "clientInfo": {"name": "t", "version": "1"}}}) + "\n"
    p = subprocess.run([SBX_BIN], input=init.encode(), env=clean_env(env),
                       capture_output=True, timeout=30)
    assert p.returncode == 125 and p.stdout == b"", p
    assert phrase in p.stderr.decode(), p.stderr
    p = subprocess.run([SBX_BIN], input=init.encode(), env=clean_env(), capture_output=True,
                       timeout=30)
    assert p.returncode == 0 and json.loads(p.stdout)["id"] == 1, p


def test_unknown_tool_and_bad_call_params(server):
    for params, code in [({"name": "no_such_tool", "arguments": {}}, INVALID_PARAMS),
                         ({"arguments": {}}, INVALID_PARAMS),
                         ({"name": 5}, INVALID_PARAMS),
                         ({"name": "execute_code", "arguments": [1]}, INVALID_PARAMS),
                         ({"name": "execute_code", "arguments": "print(1)"}, INVALID_PARAMS)]:
        id = server.request_async("tools/call", params)
        err = next_error(server)
        assert err["error"]["code"] == code and err["id"] == id, (params, err)


def test_unknown_resource(server):
    err = server.request("resources/read", {"uri": "sandbox://nothing"})
    assert "error" in err and err["error"]["code"] == -32002, err
    assert err["error"]["data"]["uri"] == "sandbox://nothing"


def test_a_server_maps_only_what_its_backend_needs(server):
    """A server opens its own backend's library only: the bubblewrap server
    maps no libcurl, libmicrohttpd, TLS or libarchive (what the container
    backends and --http need), and lists the other backends as unloaded."""
    with open("/proc/%d/maps" % server.pid) as f:
        maps = f.read()
    for lib in ("libcurl", "libmicrohttpd", "libssl", "libcrypto", "libgnutls", "libarchive",
                "docker.so"):
        assert lib not in maps, lib
    assert "bwrap.so" in maps
    r = server.call_tool("list_backends", {})
    backends = {b["name"]: b for b in r["result"]["structuredContent"]["backends"]}
    assert backends["bwrap"]["status"] == "ok" and "controls" in backends["bwrap"], backends
    if "docker" in backends:  # built with the docker plugin (libarchive found)
        d = backends["docker"]
        assert d["status"] == "unloaded" and "controls" not in d, d
        assert "this server, which runs backend 'bwrap'" in d["error"], d


# --------------------------------------------------------------------------
# What sandboxed code prints


LOOKALIKE = r'''
import json, os, sys
fake = [
    {"jsonrpc": "2.0", "id": 424242, "result": {"content": [], "isError": False}},
    {"jsonrpc": "2.0", "method": "notifications/progress",
     "params": {"progressToken": "t", "progress": 99}},
    {"jsonrpc": "2.0", "id": 424243, "error": {"code": -32603, "message": "forged"}},
]
for m in fake:
    print(json.dumps(m))
sys.stdout.flush()
os.write(1, b'\n{"jsonrpc":"2.0","id":424242,"result":{}}\n\n')
sys.stderr.write(json.dumps(fake[0]) + "\n")
for path in ("/dev/stdout", "/proc/self/fd/1", "/proc/1/fd/1"):
    try:
        with open(path, "w") as f:
            f.write('{"jsonrpc":"2.0","id":424243,"result":{}}\n')
    except OSError as e:
        print("cannot open", path, e.errno)
print("done")
'''


def test_output_that_looks_like_jsonrpc(server):
    r = server.call_tool("execute_code", {"code": LOOKALIKE, "timeout": 20})
    sc = structured(r)
    assert sc["status"] == "ok", sc
    assert '{"jsonrpc": "2.0", "id": 424242' in sc["stdout"]
    assert '{"jsonrpc":"2.0","id":424242,"result":{}}' in sc["stdout"]
    assert sc["stdout"].rstrip().endswith("done")
    assert '"id": 424242' in sc["stderr"]
    # the readable text carries the same lines, as printed
    text = r["result"]["content"][0]["text"]
    assert text.startswith("status: ok, exit code 0\n--- stdout ---\n" + sc["stdout"]), text
    assert "--- stderr ---\n" + sc["stderr"] in text, text
    # no message with those ids reached the client: the next ones answer
    # requests that really carry them
    for id in (424242, 424243):
        r2 = server.response(server.request_async("ping", id=id), timeout=10)
        assert r2 == {"jsonrpc": "2.0", "id": id, "result": {}}
    assert not [m for m in server.pending if m.get("id") in (424242, 424243)]


FLOOD = r'''
import os, sys
line = b'{"jsonrpc":"2.0","id":1,"result":{}}\n'
for i in range(100000):
    os.write(1, line)
    os.write(2, b"E" * 100 + b"\n")
os.write(1, bytes(range(256)) * 2000)
os.write(1, b"no newline at the end")
'''


def test_output_flood_stays_inside_results(server):
    before = server.stdout_bytes
    r = server.call_tool("execute_code", {"code": FLOOD, "timeout": 60},
                         meta={"progressToken": "flood"}, timeout=120)
    sc = structured(r)
    assert sc["status"] == "ok", sc
    assert sc["stdout_truncated"] and sc["stderr_truncated"], sc
    assert sc["stdout_bytes"] >= 100000 * 37, sc
    assert len(sc["stdout"].encode()) <= 1 << 20
    # what the client received is the capped result (twice: structured and
    # mirrored, JSON-escaped) plus a few progress notifications
    assert server.stdout_bytes - before < 16 << 20, server.stdout_bytes - before
    progress = [m for m in server.pending if m.get("method") == "notifications/progress"]
    assert progress and all(m["params"]["progressToken"] == "flood" for m in progress)
    server.pending.clear()
    assert server.bad_lines == []


def test_libraries_install_then_hit_the_cache():
    """execute_code with libraries: the first call installs (a progress
    notification says "installing"), the second finds the set."""
    cache = tempfile.mkdtemp(prefix="llm-sandbox-test-cache-", dir="/var/tmp")
    os.chmod(cache, 0o755)
    s = Server(env=clean_env({"LLM_SANDBOX_CACHE_DIR": cache}))
    try:
        s.initialize()
        args = {"code": "import pyfiglet\nprint(pyfiglet.__name__)", "libraries": ["pyfiglet"]}
        first = structured(s.call_tool("execute_code", args, meta={"progressToken": "lib"},
                                       timeout=300))
        assert first["status"] == "ok" and first["stdout"] == "pyfiglet\n", first
        assert first["install"]["cached"] is False, first
        phases = [m["params"].get("message") for m in s.pending
                  if m.get("method") == "notifications/progress"]
        assert "installing" in phases, phases
        s.pending.clear()
        second = structured(s.call_tool("execute_code", args, timeout=60))
        assert second["status"] == "ok" and second["install"]["cached"] is True, second
        bad = structured(s.call_tool("execute_code", {"code": "1", "libraries": ["; rm -rf /"]}))
        assert bad["status"] == "refused" and "install" not in bad, bad
        assert s.bad_lines == []
        assert s.finish() == 0
    finally:
        s.kill()
        shutil.rmtree(cache, ignore_errors=True)


BAD_BYTES = r'''
import os, time
os.write(1, b"ok \xc0\xaf \xff \xed\xa0\x80 \xf4\x90\x80\x80 end\n")
time.sleep(0.4)
os.write(1, "\u00e9".encode() * 150 + b"x" + "\u20ac".encode() * 70)
time.sleep(0.4)
os.write(2, b"\xfe\n")
'''


def test_stream_is_valid_utf8(server):
    """Whatever a program prints (invalid UTF-8, characters cut by the
    200-byte progress tail) and whatever a message quotes (cut by a
    buffer), every line the server writes is valid UTF-8 (the reader
    decodes each strictly)."""
    r = server.call_tool("execute_code", {"code": BAD_BYTES, "timeout": 20},
                         meta={"progressToken": "utf8"})
    sc = structured(r)
    assert sc["status"] == "ok", sc
    assert sc["stdout"].startswith("ok ") and "\u20ac" in sc["stdout"], sc
    long = "\u00e9" * 600
    for args in ({"code": "x", "language": long}, {"code": "x", "libraries": [long]},
                 {"code": "x", "files": {long: "x"}}, {"code": "x", "k" * 59 + "\u00e9": 1}):
        r = server.call_tool("execute_code", args)
        assert r["result"]["isError"] is True and structured(r)["message"], r
    r = server.call_tool("get_language_details", {"language": long})
    assert r["result"]["isError"] is True
    server.pending.clear()  # the progress notifications
    assert server.bad_lines == [], server.bad_lines
    # and strictly invalid UTF-8 in a request is refused, not echoed
    server.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_code",'
                    b'"arguments":{"code":"x","a\xc0\xaf":1}}}\n')
    assert next_error(server)["error"]["code"] == PARSE_ERROR


STRAY_WRITER = r'''
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static void *late(void *arg)
{
    (void)arg;
    usleep(300000);
    printf("STRAY printf to stdout from a library\n");
    fflush(stdout);
    (void)!write(1, "STRAY write to fd 1\n", 20);
    return NULL;
}
__attribute__((constructor)) static void start(void)
{
    pthread_t t;
    pthread_create(&t, NULL, late, NULL);
    pthread_detach(t);
}
'''


def test_stray_writes_to_fd1_do_not_reach_the_stream(tmp_path):
    """STYLE G1: a library writing to stdout after start-up (simulated by
    an LD_PRELOAD object whose thread prints after 300 ms) lands on stderr,
    never in the protocol stream."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        pytest.skip("no C compiler to build the stray writer")
    src, lib = tmp_path / "stray.c", tmp_path / "stray.so"
    src.write_text(STRAY_WRITER)
    subprocess.run([cc, "-shared", "-fPIC", "-pthread", "-o", str(lib), str(src)], check=True)
    env = clean_env({"LD_PRELOAD": str(lib)})
    # a sanitizer build wants its runtime first; the stray object has none
    env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0").lstrip(":")
    s = Server(env=env)
    try:
        s.initialize()
        time.sleep(0.6)
        assert_answers(s)
        assert s.finish() == 0
        assert s.bad_lines == [], s.bad_lines
        assert b"STRAY printf" in s.stderr and b"STRAY write" in s.stderr, s.stderr[-2000:]
    finally:
        s.kill()


# --------------------------------------------------------------------------
# Ending


def start_endless(s):
    """Start `while True: pass`; (a ProcWatch that has seen its python3,
    the request's id)."""
    watch = ProcWatch(s.pid)
    id = s.request_async("tools/call", {"name": "execute_code",
                                   "arguments": {"code": "while True: pass", "timeout": 120}})
    deadline = time.monotonic() + 20
    while not watch.saw("python3"):
        assert time.monotonic() < deadline, "the sandboxed python3 never showed up"
        time.sleep(0.02)
    return watch, id


def test_end_of_input_ends_the_server_and_its_runs():
    s = Server()
    try:
        s.initialize()
        watch, _ = start_endless(s)
        t0 = time.monotonic()
        rc = s.finish(timeout=10)
        took = time.monotonic() - t0
        watch.stop()
        assert rc == 0, s.stderr.decode(errors="replace")
        assert took < 3, "the server took %.2f s to end" % took
        gone = watch.wait_gone(1.0)
        assert gone is not None, "left running: %s" % watch.alive()
        assert s.bad_lines == []
    finally:
        s.kill()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_ends_the_server_and_its_runs(sig):
    """A signal ends the server gracefully: the call in flight is answered
    (a cancelled result, not silence) before the server exits, its
    sandbox is gone, and the exit code says which signal it was
    (128 + N, as a shell reports a process a signal ended)."""
    s = Server()
    try:
        s.initialize()
        watch, id = start_endless(s)
        t0 = time.monotonic()
        s.proc.send_signal(sig)
        rc = s.proc.wait(10)
        took = time.monotonic() - t0
        watch.stop()
        assert rc == 128 + sig, (rc, s.stderr.decode(errors="replace"))
        assert took < 3, "the server took %.2f s to end" % took
        assert watch.wait_gone(1.0) is not None, "left running: %s" % watch.alive()
        answer = s.response(id, timeout=5)
        result = answer["result"]
        assert result["isError"] is True, answer
        assert result["structuredContent"]["status"] == "cancelled", answer
        assert s.bad_lines == []
    finally:
        s.kill()


@pytest.mark.parametrize("first,second", [(2**63 - 1, 12345678901234567890),
                                          ("id\u0001one", "id\u0001two")],
                         ids=["above-int64", "control-in-string"])
def test_cancel_matches_ids_exactly(server, first, second):
    """Two ids that differ only above what int64 holds, or only after a
    control character, are two ids (an id with a NUL is refused:
    test_edges.py): cancelling the second leaves the first running."""
    watch = ProcWatch(server.pid)
    endless = {"name": "execute_code", "arguments": {"code": "while True: pass", "timeout": 120}}

    def running():
        return sum(1 for comm, _state in watch.alive().values() if comm == "python3")

    def wait_running(n, timeout):
        deadline = time.monotonic() + timeout
        while running() != n:
            assert time.monotonic() < deadline, "%d runs, not %d" % (running(), n)
            time.sleep(0.02)

    try:
        for id in (first, second):
            server.request_async("tools/call", endless, id=id)
        wait_running(2, 20)
        server.notify("notifications/cancelled", {"requestId": second})
        wait_running(1, 2)
        time.sleep(0.5)
        assert running() == 1, "cancelling %r ended the run of %r too" % (second, first)
        server.notify("notifications/cancelled", {"requestId": first})
        assert watch.wait_gone(2.0) is not None, "left running: %s" % watch.alive()
    finally:
        watch.stop()


def test_id_of_a_request_in_flight_is_refused(server):
    """A second request with the id of a call still running is refused
    (-32600), so a cancel names one call; the first call is untouched and
    the id is free again once it ended."""
    watch, id = start_endless(server)
    try:
        for method, params in [("ping", None), ("tools/call", {
                "name": "execute_code", "arguments": {"code": "print(1)"}})]:
            server.request_async(method, params, id=id)
            err = next_error(server)
            assert err["id"] == id and err["error"]["code"] == INVALID_REQUEST, err
            assert "in flight" in err["error"]["message"], err
        assert any(c == "python3" for c, _s in watch.alive().values()), "the first call ended"
        server.notify("notifications/cancelled", {"requestId": id})
        assert watch.wait_gone(5.0) is not None, watch.alive()
    finally:
        watch.stop()
    # the call is retired just after its sandbox is gone: then the id is free
    deadline = time.monotonic() + 10
    server.request_async("ping", None, id=id)
    msg = server.next_message(10)
    while "error" in msg and time.monotonic() < deadline:
        time.sleep(0.05)
        server.request_async("ping", None, id=id)
        msg = server.next_message(10)
    assert msg == {"jsonrpc": "2.0", "id": id, "result": {}}, msg


def test_cancel_kills_the_run(server):
    watch, id = start_endless(server)
    server.notify("notifications/cancelled", {"requestId": id, "reason": "test"})
    gone = watch.wait_gone(1.0)
    watch.stop()
    assert gone is not None, "still running 1 s after the cancel: %s" % watch.alive()
    # no answer for a cancelled request (the specification's SHOULD NOT);
    # if one came, it says cancelled
    try:
        r = server.response(id, timeout=1)
        assert structured(r)["status"] == "cancelled", r
    except TimeoutError:
        pass
    r = server.call_tool("execute_code", {"code": "print(6*7)"})
    assert structured(r)["stdout"] == "42\n"


# --------------------------------------------------------------------------
# Audit log


def test_audit_log_has_one_line_per_call_and_no_output(tmp_path):
    """LLM_SANDBOX_AUDIT_LOG: one JSON line per execute_code call, refusals
    of bad arguments included, with the outcome and the effective policy,
    and never the code or what it printed."""
    log = tmp_path / "audit.jsonl"
    s = Server(env=clean_env({"LLM_SANDBOX_AUDIT_LOG": str(log)}))
    try:
        s.initialize()
        secret = "SECRET_%d" % os.getpid()
        ok = s.call_tool("execute_code", {"code": "print('%s' * 3)" % secret})
        assert structured(ok)["status"] == "ok", ok
        bad = s.call_tool("execute_code", {"code": "print(1)", "timeout": -5})
        assert structured(bad)["status"] == "refused", bad
        gone = s.call_tool("execute_code", {"code": "print(1)", "language": "cobol"})
        assert structured(gone)["status"] == "refused", gone
        slow = s.call_tool("execute_code", {"code": "while True: pass", "timeout": 1})
        assert structured(slow)["status"] == "timeout", slow
        s.call_tool("get_supported_languages", {})
        assert s.finish() == 0
    finally:
        s.kill()
    text = log.read_text()
    assert secret not in text and "print(" not in text and "while True" not in text, text
    lines = [json.loads(line) for line in text.splitlines()]
    assert [a["status"] for a in lines] == ["ok", "refused", "refused", "timeout"], lines
    assert all(a["tool"] == "execute_code" and a["time"].endswith("Z") for a in lines), lines
    first, _, _, last = lines
    assert first["language"] == "python" and first["backend"] == "bwrap", first
    assert first["stdout_bytes"] == 3 * len(secret) + 1 and first["exit_code"] == 0, first
    assert first["policy"]["wall_time_ms"] == 30000, first["policy"]
    assert last["limit"] == "wall_time" and last["policy"]["wall_time_ms"] == 1000, last
    assert oct(log.stat().st_mode & 0o777) == oct(0o600), oct(log.stat().st_mode)


# --------------------------------------------------------------------------
# Revision 2026-07-28: no initialize; each request carries its version and
# the client's capabilities in params._meta (the envelope); results say
# resultType, name the server in _meta, and the cacheable ones say ttlMs
# and cacheScope.

MODERN = "2026-07-28"
UNSUPPORTED_VERSION, HEADER_MISMATCH = -32022, -32020
SERVER_INFO = "io.modelcontextprotocol/serverInfo"


def envelope(version=MODERN, **extra):
    meta = {"io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "test_protocol", "version": "1"}}
    meta.update(extra)
    return meta


def modern(params=None, meta=None):
    """params with the envelope (or meta) as _meta."""
    return dict(params or {}, _meta=envelope() if meta is None else meta)


def check_modern_result(resp, cacheable):
    assert "result" in resp, resp
    r = resp["result"]
    assert r["resultType"] == "complete", r
    assert r["_meta"][SERVER_INFO]["name"] == "llm-sandbox", r
    if cacheable:
        assert r["ttlMs"] == 0 and r["cacheScope"] == "private", r
    else:
        assert "ttlMs" not in r and "cacheScope" not in r, r
    return r


@pytest.fixture
def fresh():
    """A server that has seen no initialize; checked as `server` is."""
    s = Server()
    try:
        yield s
        assert s.bad_lines == [], s.bad_lines
        assert s.finish() == 0, s.stderr.decode(errors="replace")
    finally:
        s.kill()


def test_2026_serves_without_initialize(fresh):
    d = check_modern_result(fresh.request("server/discover", modern(), timeout=10), True)
    assert d["supportedVersions"][0] == MODERN, d
    assert {"2025-11-25", "2025-06-18", "2025-03-26"} <= set(d["supportedVersions"]), d
    assert "tools" in d["capabilities"] and "resources" in d["capabilities"], d
    assert d["capabilities"]["resources"].get("subscribe") is not True, d
    assert "sandbox" in d["instructions"], d
    tools = check_modern_result(fresh.request("tools/list", modern(), timeout=10), True)
    assert "execute_code" in {t["name"] for t in tools["tools"]}, tools
    r = check_modern_result(fresh.request(
        "tools/call", modern({"name": "execute_code", "arguments": {"code": "print(6*7)"}}),
        timeout=60), False)
    assert r["structuredContent"]["stdout"] == "42\n" and r["isError"] is False, r
    r = check_modern_result(fresh.request(
        "resources/read", modern({"uri": "sandbox://languages"}), timeout=30), True)
    assert r["contents"][0]["uri"] == "sandbox://languages", r
    check_modern_result(fresh.request("resources/list", modern(), timeout=10), True)
    check_modern_result(fresh.request("resources/templates/list", modern(), timeout=10), True)
    # without the envelope the same connection still wants initialize
    err = fresh.request("tools/list", timeout=10)
    assert err["error"]["code"] == INVALID_REQUEST and "initialize" in err["error"]["message"]


ENVELOPE_ERRORS = [
    ("future", envelope("2099-01-01"), UNSUPPORTED_VERSION),
    ("2025-in-meta", envelope("2025-11-25"), UNSUPPORTED_VERSION),
    ("version-not-string", envelope(20260728), INVALID_PARAMS),
    ("version-null", envelope(None), INVALID_PARAMS),
    ("no-capabilities", {"io.modelcontextprotocol/protocolVersion": MODERN}, INVALID_PARAMS),
    ("capabilities-not-object",
     envelope(**{"io.modelcontextprotocol/clientCapabilities": []}), INVALID_PARAMS),
    ("client-info-bad", envelope(**{"io.modelcontextprotocol/clientInfo": {"name": 1}}),
     INVALID_PARAMS),
    ("log-level-bad", envelope(**{"io.modelcontextprotocol/logLevel": "loud"}), INVALID_PARAMS),
]


@pytest.mark.parametrize("meta,code", [e[1:] for e in ENVELOPE_ERRORS],
                         ids=[e[0] for e in ENVELOPE_ERRORS])
def test_2026_envelope_errors(fresh, meta, code):
    for method in ("tools/list", "server/discover"):
        err = fresh.request(method, {"_meta": meta}, timeout=10)
        assert err["error"]["code"] == code, err
        if code == UNSUPPORTED_VERSION:
            asked = meta["io.modelcontextprotocol/protocolVersion"]
            assert err["error"]["data"] == {"supported": [MODERN], "requested": asked}, err
            assert MODERN in err["error"]["message"], err
    # and the next good request is served
    check_modern_result(fresh.request("tools/list", modern(), timeout=10), True)


def test_2026_methods_it_removed(fresh):
    """ping, logging/setLevel and resources/(un)subscribe are gone in
    2026-07-28; initialize is the 2025 handshake even with an envelope."""
    for method, params in [("ping", {}), ("logging/setLevel", {"level": "debug"}),
                           ("resources/subscribe", {"uri": "sandbox://languages"}),
                           ("subscriptions/listen", {"notifications": {}}),
                           ("no/such/method", {})]:
        err = fresh.request(method, modern(params), timeout=10)
        assert err["error"]["code"] == METHOD_NOT_FOUND, (method, err)
    r = fresh.request("initialize", modern({"protocolVersion": "2025-11-25", "capabilities": {},
                                           "clientInfo": {"name": "t", "version": "1"}}))
    assert r["result"]["protocolVersion"] == "2025-11-25" and "resultType" not in r["result"], r


def test_2026_missing_resource_is_invalid_params(server):
    """-32602 on 2026-07-28, while the initialized 2025 session on the same
    connection keeps -32002 (test_unknown_resource)."""
    err = server.request("resources/read", modern({"uri": "sandbox://nothing"}))
    assert err["error"]["code"] == INVALID_PARAMS, err
    assert err["error"]["data"] == {"uri": "sandbox://nothing"}, err
    err = server.request("resources/read", {"uri": "sandbox://nothing"})
    assert err["error"]["code"] == -32002, err


def test_2026_and_2025_requests_on_one_connection(server):
    """An initialized connection answers each request in its own era."""
    old = server.request("tools/list", timeout=10)["result"]
    new = check_modern_result(server.request("tools/list", modern(), timeout=10), True)
    assert not {"resultType", "ttlMs", "cacheScope", "_meta"} & set(old), old
    assert old["tools"] == new["tools"]
    r = server.call_tool("execute_code", {"code": "print(6*7)"})
    assert "resultType" not in r["result"] and structured(r)["stdout"] == "42\n", r


@pytest.mark.parametrize("level,want", [(None, 0), ("warning", 0), ("info", 3), ("debug", 3)])
def test_2026_logs_only_at_the_requested_level(level, want):
    """notifications/message only when the envelope asks for a logLevel
    (2026-07-28 has no logging/setLevel), and only at or above it."""
    s = Server(args=("serve", "--test-fixtures"))
    try:
        extra = {"io.modelcontextprotocol/logLevel": level} if level else {}
        id = s.request_async("tools/call", modern({"name": "test_tool_with_logging",
                                                   "arguments": {}}, envelope(**extra)))
        r = check_modern_result(s.response(id, timeout=30), False)
        assert r["content"][0]["text"] == "Logging test completed", r
        logs = [m for m in s.pending if m.get("method") == "notifications/message"]
        assert len(logs) == want, s.pending
        assert s.finish() == 0
        assert s.bad_lines == []
    finally:
        s.kill()


def test_2026_cancel_kills_the_run(fresh):
    watch = ProcWatch(fresh.pid)
    id = fresh.request_async("tools/call", modern({"name": "execute_code", "arguments": {
        "code": "while True: pass", "timeout": 120}}))
    t0 = time.monotonic()
    while not watch.saw("python3"):
        assert time.monotonic() - t0 < 20, "the run did not start"
        time.sleep(0.02)
    fresh.notify("notifications/cancelled", {"requestId": id, "_meta": envelope()})
    gone = watch.wait_gone(1.0)
    watch.stop()
    assert gone is not None, "still running 1 s after the cancel: %s" % watch.alive()


# ---- the same over Streamable HTTP: no session, headers checked --------------


@pytest.fixture(scope="module")
def http_url():
    try:
        proc, url = start_http()
    except HttpUnavailable as e:
        pytest.skip(str(e))
    try:
        yield url
        assert proc.poll() is None, "serve --http died during the tests"
    finally:
        assert stop_http(proc) == SIGTERM_EXIT


def post(url, msg, headers):
    """POST one message; (status, headers, parsed JSON body or None)."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    try:
        conn.request("POST", u.path, json.dumps(msg).encode(), dict({
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream"}, **headers))
        resp = conn.getresponse()
        body = resp.read()
        return resp.status, resp.headers, json.loads(body) if body else None
    finally:
        conn.close()


def modern_headers(method, name=None, version=MODERN):
    h = {"MCP-Protocol-Version": version, "Mcp-Method": method}
    if name is not None:
        h["Mcp-Name"] = name
    return h


def test_http_oversized_body_names_its_request(http_url):
    """A body over the cap is refused (413) with the id from its start."""
    u = urllib.parse.urlsplit(http_url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    try:
        body = b'{"jsonrpc":"2.0","id":77,"method":"ping","params":{"x":"' + \
            b"a" * (5 << 20) + b'"}}'
        conn.request("POST", u.path, body, {"Content-Type": "application/json",
                                            "Accept": "application/json, text/event-stream"})
        resp = conn.getresponse()
        msg = json.loads(resp.read())
    finally:
        conn.close()
    assert resp.status == 413, (resp.status, msg)
    assert msg["id"] == 77 and msg["error"]["code"] == INVALID_REQUEST, msg


def test_2026_http_needs_no_session(http_url):
    msg = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": modern()}
    status, headers, body = post(http_url, msg, modern_headers("tools/list"))
    assert status == 200 and headers.get("Mcp-Session-Id") is None, (status, body)
    check_modern_result(body, True)
    call = {"jsonrpc": "2.0", "id": "c", "method": "tools/call",
            "params": modern({"name": "execute_code", "arguments": {"code": "print(6*7)"}})}
    status, _, body = post(http_url, call, modern_headers("tools/call", "execute_code"))
    assert status == 200 and body["id"] == "c", body
    assert check_modern_result(body, False)["structuredContent"]["stdout"] == "42\n", body
    # a name that is not plain ASCII travels base64-encoded
    read = {"jsonrpc": "2.0", "id": 2, "method": "resources/read",
            "params": modern({"uri": "sandbox://languages"})}
    b64 = "=?base64?%s?=" % base64.b64encode(b"sandbox://languages").decode()
    status, _, body = post(http_url, read, modern_headers("resources/read", b64))
    assert status == 200, body
    check_modern_result(body, True)
    # a notification is accepted, as before
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 99, "_meta": envelope()}}
    assert post(http_url, note, {"MCP-Protocol-Version": MODERN})[0] == 202
    # and the 2025 rules still hold for requests without the envelope
    status, _, body = post(http_url, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
                           {"MCP-Protocol-Version": "2025-11-25"})
    assert status == 400 and "Mcp-Session-Id" in body["error"]["message"], body


CALL = {"name": "execute_code", "arguments": {"code": "print(1)"}}
HTTP_REFUSALS = [
    ("version-header-differs", "tools/list", {}, None,
     modern_headers("tools/list", version="2025-11-25"), HEADER_MISMATCH),
    ("version-header-missing", "tools/list", {}, None, {"Mcp-Method": "tools/list"},
     HEADER_MISMATCH),
    ("method-header-missing", "tools/list", {}, None, {"MCP-Protocol-Version": MODERN},
     HEADER_MISMATCH),
    ("method-header-differs", "tools/list", {}, None, modern_headers("tools/call"),
     HEADER_MISMATCH),
    ("name-header-missing", "tools/call", CALL, None, modern_headers("tools/call"),
     HEADER_MISMATCH),
    ("name-header-differs", "tools/call", CALL, None,
     modern_headers("tools/call", "list_backends"), HEADER_MISMATCH),
    ("name-header-bad-base64", "tools/call", CALL, None,
     modern_headers("tools/call", "=?base64?!!!?="), HEADER_MISMATCH),
    ("unsupported-version", "tools/list", {}, envelope("2099-01-01"),
     modern_headers("tools/list", version="2099-01-01"), UNSUPPORTED_VERSION),
    ("header-without-envelope", "tools/list", {}, {}, modern_headers("tools/list"),
     INVALID_PARAMS),
    ("envelope-incomplete", "tools/list", {},
     {"io.modelcontextprotocol/protocolVersion": MODERN}, modern_headers("tools/list"),
     INVALID_PARAMS),
]


@pytest.mark.parametrize("method,params,meta,headers,code", [r[1:] for r in HTTP_REFUSALS],
                         ids=[r[0] for r in HTTP_REFUSALS])
def test_2026_http_refusals(http_url, method, params, meta, headers, code):
    """HTTP 400 with the JSON-RPC error (and the request's id) when the
    envelope is not served or the headers do not repeat the body."""
    msg = {"jsonrpc": "2.0", "id": 7, "method": method,
           "params": dict(params, _meta=envelope() if meta is None else meta)}
    if meta == {}:
        del msg["params"]["_meta"]
    status, headers, body = post(http_url, msg, headers)
    assert status == 400, (status, body)
    assert body["id"] == 7 and body["error"]["code"] == code, body
