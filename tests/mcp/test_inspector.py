# SPDX-License-Identifier: MIT
"""The MCP Inspector (npm @modelcontextprotocol/inspector, CLI mode, under
the Node.js 22 that tests/mcp/setup.sh installs) against the real
llm-sandbox binary: over stdio, the Inspector starting the server itself,
and over Streamable HTTP (`llm-sandbox serve --http`), skipped with the
binary's own words while the build has no HTTP transport.

    tests/mcp/setup.sh
    /usr/bin/python3 -m pytest -q -rs tests/mcp/test_inspector.py

SBX_BIN names the binary (ctest sets it). The first test is the issue's
"done when" command, word for word with the binary's path.
"""
import json
import os
import re
import shutil
import subprocess

import pytest

from mcptest import (HERE, SBX_BIN, SIGTERM_EXIT, HttpUnavailable, clean_env, start_http,
                     stop_http)

NODE_DIR = os.path.join(HERE, "node_modules", "node", "bin")
NPX = shutil.which("npx", path="/usr/bin:/bin:/usr/local/bin") or "npx"
INSPECTOR = os.path.join(HERE, "node_modules", ".bin", "inspector")
TOOLS = {"execute_code", "get_supported_languages", "get_language_details", "list_backends"}

pytestmark = [
    pytest.mark.skipif(not os.access(SBX_BIN, os.X_OK),
                       reason="no llm-sandbox binary at %s (build first)" % SBX_BIN),
    pytest.mark.skipif(not os.path.exists(os.path.join(NODE_DIR, "node")),
                       reason="the MCP clients are not installed: run tests/mcp/setup.sh"),
]


def inspector_env(tmp):
    """Node 22 first on PATH; HOME (where the Inspector keeps its catalog,
    storage and client config) a temporary directory."""
    env = clean_env()
    env["PATH"] = NODE_DIR + ":" + env["PATH"]
    env["HOME"] = tmp
    env["MCP_STORAGE_DIR"] = os.path.join(tmp, "storage")
    env["MCP_CATALOG_PATH"] = os.path.join(tmp, "catalog.json")
    env["MCP_CLIENT_CONFIG_PATH"] = os.path.join(tmp, "client.json")
    env["npm_config_update_notifier"] = "false"
    return env


def inspector(tmp_path, *args, npx=False, timeout=120):
    """Run the Inspector's CLI; (exit code, stdout, stderr)."""
    if npx:
        cmd = [NPX, "@modelcontextprotocol/inspector", *args]
    else:
        cmd = [INSPECTOR, *args]
    p = subprocess.run(cmd, cwd=HERE, env=inspector_env(str(tmp_path)), capture_output=True,
                       timeout=timeout)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def result_of(rc, out, err, want_rc=0):
    assert rc == want_rc, "inspector exited %d\nstdout: %s\nstderr: %s" % (
        rc, out[-2000:], err[-2000:])
    doc = json.loads(out)
    # --format json wraps the result; the default text format prints it bare
    return doc.get("result", doc) if isinstance(doc, dict) else doc


def check_tools(tools):
    names = {t["name"] for t in tools}
    assert TOOLS <= names, names
    for t in tools:
        assert t["inputSchema"]["type"] == "object", t
    exec_ = next(t for t in tools if t["name"] == "execute_code")
    assert exec_["inputSchema"]["required"] == ["code"]
    assert "code" in exec_["inputSchema"]["properties"]
    assert exec_["outputSchema"]["type"] == "object"


def check_languages(contents):
    assert contents[0]["uri"] == "sandbox://languages"
    assert contents[0]["mimeType"] == "application/json"
    langs = json.loads(contents[0]["text"])
    assert "python" in langs, langs
    assert re.fullmatch(r"3\.\d+\.\d+", langs["python"]["version"]), langs["python"]


def check_details(result):
    assert result["isError"] is False, result
    d = result["structuredContent"]
    assert d["name"] == "python"
    assert re.fullmatch(r"3\.\d+\.\d+", d["version"]), d  # the probed toolchain
    assert d["package_manager"] == "pip"


# --------------------------------------------------------------------------
# stdio: the Inspector starts the server


def test_done_when_command(tmp_path):
    """npx @modelcontextprotocol/inspector --cli llm-sandbox --method
    tools/call --tool-name execute_code --tool-arg code='print(6*7)'"""
    if not os.path.isabs(NPX):
        pytest.skip("no npx on this machine (it comes with npm)")
    r = result_of(*inspector(tmp_path, "--cli", SBX_BIN, "--method", "tools/call",
                             "--tool-name", "execute_code", "--tool-arg", "code=print(6*7)",
                             npx=True))
    assert r["structuredContent"]["stdout"] == "42\n", r
    assert r["structuredContent"]["status"] == "ok", r
    assert r["isError"] is False


def test_tools_list(tmp_path):
    r = result_of(*inspector(tmp_path, "--cli", SBX_BIN, "--method", "tools/list",
                             "--format", "json"))
    check_tools(r["tools"])


def test_tools_list_schemas_are_portable(tmp_path):
    """--strict: the Inspector's schema portability check finds no error
    and no warning (a nullable field is an anyOf, never a type array);
    every tool has an outputSchema, and the annotations tell the truth."""
    rc, out, err = inspector(tmp_path, "--cli", SBX_BIN, "--method", "tools/list", "--strict",
                             "--format", "json")
    assert rc == 0, "portability errors:\n" + err[-4000:]
    assert "Warning" not in err, "portability warnings:\n" + err[-4000:]
    tools = json.loads(out)["result"]["tools"]
    check_tools(tools)
    by_name = {t["name"]: t for t in tools}
    for t in tools:
        assert t.get("outputSchema", {}).get("type") == "object", t["name"]
    ann = {name: t["annotations"] for name, t in by_name.items()}
    assert ann["close_session"]["destructiveHint"] is True
    assert ann["upload_file"]["destructiveHint"] is True  # it replaces a file of that name
    # libraries are installed from package registries, whatever the network
    assert ann["execute_code"]["openWorldHint"] is True
    assert ann["create_session"]["openWorldHint"] is True
    for name in ("get_supported_languages", "list_sessions", "download_file", "list_files"):
        assert ann[name]["readOnlyHint"] is True and ann[name]["destructiveHint"] is False


def test_execute_code_json(tmp_path):
    r = result_of(*inspector(tmp_path, "--cli", SBX_BIN, "--method", "tools/call",
                             "--tool-name", "execute_code", "--format", "json",
                             "--tool-args-json", json.dumps({"code": "import sys\nprint(sys.stdin.read()[::-1])",
                                                             "stdin": "olleh", "timeout": 20})))
    assert r["structuredContent"]["stdout"] == "hello\n", r
    assert r["structuredContent"]["status"] == "ok"
    # the text block is the readable form, the JSON is structuredContent
    assert r["content"][0] == {"type": "text",
                               "text": "status: ok, exit code 0\n--- stdout ---\nhello\n"}, r


def test_execute_code_refused(tmp_path):
    """A refused run is a tool result with isError (the Inspector exits 5
    for those, printing the result), not a protocol error."""
    rc, out, err = inspector(tmp_path, "--cli", SBX_BIN, "--method", "tools/call",
                             "--tool-name", "execute_code", "--tool-arg", "code=print(1)",
                             "language=cobol", "--format", "json")
    assert "tool_is_error" in err, err
    r = result_of(rc, out, err, want_rc=5)
    assert r["isError"] is True
    assert r["structuredContent"]["status"] == "refused"
    assert "cobol" in r["structuredContent"]["message"]


def test_resources_read_languages(tmp_path):
    r = result_of(*inspector(tmp_path, "--cli", SBX_BIN, "--method", "resources/read",
                             "--uri", "sandbox://languages", "--format", "json"))
    check_languages(r["contents"])


def test_resources_list(tmp_path):
    r = result_of(*inspector(tmp_path, "--cli", SBX_BIN, "--method", "resources/list",
                             "--format", "json"))
    uris = {x["uri"] for x in r["resources"]}
    assert {"sandbox://languages", "sandbox://backends", "sandbox://policy"} <= uris, uris


def test_get_language_details(tmp_path):
    r = result_of(*inspector(tmp_path, "--cli", SBX_BIN, "--method", "tools/call",
                             "--tool-name", "get_language_details", "--tool-arg",
                             "language=python", "--format", "json"))
    check_details(r)


def test_list_backends(tmp_path):
    r = result_of(*inspector(tmp_path, "--cli", SBX_BIN, "--method", "tools/call",
                             "--tool-name", "list_backends", "--format", "json"))
    names = [b["name"] for b in r["structuredContent"]["backends"]]
    assert "bwrap" in names, r


# --------------------------------------------------------------------------
# Streamable HTTP: we start the server, the Inspector connects to its URL


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


def test_http_tools_list(tmp_path, http_url):
    r = result_of(*inspector(tmp_path, "--cli", http_url, "--transport", "http", "--method",
                             "tools/list", "--format", "json"))
    check_tools(r["tools"])


def test_http_execute_code(tmp_path, http_url):
    r = result_of(*inspector(tmp_path, "--cli", http_url, "--transport", "http", "--method",
                             "tools/call", "--tool-name", "execute_code", "--tool-arg",
                             "code=print(6*7)", "--format", "json"))
    assert r["structuredContent"]["stdout"] == "42\n", r
    assert r["structuredContent"]["status"] == "ok"


def test_http_resources_read_languages(tmp_path, http_url):
    r = result_of(*inspector(tmp_path, "--cli", http_url, "--transport", "http", "--method",
                             "resources/read", "--uri", "sandbox://languages", "--format",
                             "json"))
    check_languages(r["contents"])


def test_http_get_language_details(tmp_path, http_url):
    r = result_of(*inspector(tmp_path, "--cli", "--server-url", http_url, "--transport", "http",
                             "--method", "tools/call", "--tool-name", "get_language_details",
                             "--tool-arg", "language=python", "--format", "json"))
    check_details(r)
