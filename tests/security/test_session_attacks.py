# SPDX-License-Identifier: MIT
"""Attacks between and on stateful sessions (issue 9, cross-session):
through the real MCP server, one session's interpreter keeps a secret
everywhere it can (workspace, /tmp, /dev/shm, System V shared memory, an
abstract unix socket and a loopback listener, served by threads that
outlive the call) while a second session, in Python and in JavaScript,
goes looking; the first then counts the connections it got. The second
also tries the first's files through the file tools and resources. The
host checks the two interpreters' namespaces from /proc."""
import json
import os
import uuid

import pytest

from conftest import clean_env, find_marked, mcptest, new_mark
from test_cross_session import OWNER, SEEKER_JS, SEEKER_PY


class MarkedServer:
    """The MCP server with a marker in its sandboxes' environment, so the
    host can find their processes."""

    def __init__(self):
        self.mark = new_mark()
        self.s = mcptest.Server(env=clean_env(None, mark_value=self.mark))
        self.s.initialize()

    def call(self, name, args):
        r = self.s.call_tool(name, args, timeout=90)["result"]
        return r["structuredContent"], r["isError"]

    def interpreters(self, comm):
        return [p for p in find_marked(self.mark, comm) if p != self.s.pid]

    def finish(self):
        assert self.s.finish(30) == 0, self.s.stderr.decode(errors="replace")


@pytest.fixture
def server():  # this module's, in place of conftest's
    s = MarkedServer()
    yield s
    s.finish()


@pytest.mark.parametrize("lang", ["python", "javascript"])
def test_a_session_cannot_reach_another(server, lang):
    secret = "session-secret-%s" % uuid.uuid4().hex
    a = server.call("create_session", {"language": "python"})[0]["session_id"]
    r, _ = server.call("execute_code", {"session_id": a, "code": OWNER % secret})
    assert r["status"] == "ok", r
    owner_host_pid, = server.interpreters("python3")
    b = server.call("create_session", {"language": lang})[0]["session_id"]
    r, _ = server.call("execute_code", {"session_id": b, "code": (
        SEEKER_PY if lang == "python" else SEEKER_JS) % owner_host_pid, "timeout": 30})
    assert r["status"] == "ok", r
    assert secret not in r["stdout"] + r["stderr"]
    out = json.loads(r["stdout"])
    assert out["ipcs"] == [], out
    assert out["abstract"] in (111, "ECONNREFUSED"), out
    assert out["tcp"] in (111, "ECONNREFUSED"), out
    assert out["kill_owner"] in (3, "ESRCH"), out  # its host pid is no pid in here
    # the owner's threads served on: nobody connected
    r, _ = server.call("execute_code", {"session_id": a, "code": "print(len(hits))"})
    assert r["stdout"] == "0\n", r
    # through the front end: b's id never reaches a's files
    for path in ("secret", "../secret", "/workspace/secret"):
        sc, err = server.call("download_file", {"session_id": b, "path": path})
        assert err and secret not in json.dumps(sc), sc
    for uri in ("sandbox://sessions/%s/files/secret" % b,
                "sandbox://sessions/%s/files/../secret" % b,
                "sandbox://sessions/%s/files/%%2e%%2e/secret" % b):
        res = server.s.request("resources/read", {"uri": uri})
        assert "error" in res and secret not in json.dumps(res), res
    # from the host: the interpreters live in namespaces of their own
    pids = server.interpreters("python3") + server.interpreters("node")
    assert len(pids) == 2, pids
    for kind in ("mnt", "pid", "ipc", "net", "uts"):
        views = {os.readlink("/proc/%d/ns/%s" % (p, kind)) for p in pids}
        assert len(views) == 2, (kind, views)
        assert os.readlink("/proc/self/ns/%s" % kind) not in views, kind


def test_session_ids_cannot_be_guessed_or_injected(server):
    sid = server.call("create_session", {"language": "python"})[0]["session_id"]
    # 128 random bits (32 hex digits)
    assert len(sid) == 34 and sid.startswith("s-") and int(sid[2:], 16) >= 0
    for bad in ("", "s-", sid[:-1], sid + "0", sid.upper(), sid + "\0", "../" + sid,
                "s-%s" % ("0" * 32), {"$ne": None}, ["s-"], 0):
        sc, err = server.call("execute_code", {"session_id": bad, "code": "print(1)"})
        assert err and sc["status"] == "refused", (bad, sc)
    sc, err = server.call("execute_code", {"session_id": sid, "code": "print(1)"})
    assert sc["stdout"] == "1\n", sc
