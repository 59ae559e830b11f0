# SPDX-License-Identifier: MIT
"""Hostile `files` names through the MCP server (issue 9: path traversal):
the only front end that stages caller-named files. A name that leaves the
workspace is refused before anything runs; a plain nested name lands in
the workspace and nowhere else. The MCP protocol's own hostile inputs
(malformed JSON, sizes, UTF-8) are tested in tests/mcp."""
import json
import os
import shutil
import tempfile

import pytest

from conftest import structured


def test_file_names_cannot_leave_the_workspace(server):
    trap = tempfile.mkdtemp(prefix="sbxsec-files-", dir="/var/tmp")
    os.chmod(trap, 0o777)
    try:
        names = ["../escape.txt", "../../tmp/escape.txt", os.path.join(trap, "abs.txt"),
                 "a/../../b.txt", "./../c.txt", "..", ".", "", "sub/../../d.txt",
                 "../" * 20 + trap.lstrip("/") + "/deep.txt", "/proc/self/environ",
                 "a" * 5000]
        for name in names:
            r = server.call_tool("execute_code", {"code": "print(1)", "files": {name: "pwned"}})
            sc = structured(r)
            assert r["result"]["isError"] is True, (name, sc)
            assert sc["status"] == "refused" and sc["stdout"] == "", (name, sc)
        assert os.listdir(trap) == []
        # a legitimate nested name works, inside the workspace only
        r = server.call_tool("execute_code", {
            "code": "import os, json\nprint(json.dumps(sorted(os.path.join(d, f) for d, _, fs in "
                    "os.walk('/workspace') for f in fs)))",
            "files": {"data/in.txt": "hello"}})
        sc = structured(r)
        assert sc["status"] == "ok", sc
        assert json.loads(sc["stdout"]) == ["/workspace/data/in.txt", "/workspace/main.py"], sc
    finally:
        shutil.rmtree(trap, ignore_errors=True)


def test_nul_in_a_file_name_is_refused(server):
    """json-c cuts an object key at an escaped NUL while parsing; the MCP
    layer finds the escape in the raw message and refuses the request as
    invalid, so no cut name ('x' for 'x\\u0000y') reaches the workspace, and
    one that would climb out after the cut lands nowhere."""
    trap = tempfile.mkdtemp(prefix="sbxsec-files-", dir="/var/tmp")
    try:
        for name in ("x\u0000y", "x\u0000/../../..%s/nul.txt" % trap):
            r = server.call_tool("execute_code", {"code": "print(1)", "files": {name: "pwned"}})
            assert "result" not in r and r["error"]["code"] == -32600, r
            assert "NUL" in r["error"]["message"], r
        assert os.listdir(trap) == []
        # the server answers the next call
        r = server.call_tool("execute_code", {"code": "print(1)", "files": {"x": "y"}})
        assert structured(r)["status"] == "ok", r
    finally:
        shutil.rmtree(trap, ignore_errors=True)
