# SPDX-License-Identifier: MIT
"""Contract tests of the real llm-sandbox.exe under wine (ctest
windows.wine.exe): the command line (--version, plugins, doctor, a refused
run) and the MCP server on stdio (initialize, tools/list, a refused
execute_code), through tests/mcp/mcptest.py's checked reader.

SBX_BIN names a script that runs llm-sandbox.exe under wine in the tests'
wine prefix (tests/windows/CMakeLists.txt writes it).

    SBX_BIN=build-windows/bin/llm-sandbox-wine python3 -m pytest -q tests/windows/test_exe.py
"""
import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mcp"))
from mcptest import SBX_BIN, Server, clean_env  # noqa: E402

pytestmark = pytest.mark.skipif(not os.access(SBX_BIN, os.X_OK),
                                reason="no llm-sandbox.exe wrapper at %s" % SBX_BIN)

# The Linux host services and backends this build reports absent.
HOST_SERVICES = ("user_namespaces", "uid_range", "cgroups", "seccomp")
LINUX_ONLY = ("bwrap", "nsjail")
EXIT_USAGE, EXIT_TOOL = 2, 125


def run(*args, input=None, env=None):
    p = subprocess.run([SBX_BIN, *args], input=input, capture_output=True, env=clean_env(env),
                       timeout=60)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def test_version():
    rc, out, err = run("--version")
    assert rc == 0, err
    # the command line's text ends lines the Windows way (the C runtime's
    # text mode); only the MCP stream is binary (see the MCP test below)
    assert out.startswith(b"llm-sandbox ") and out.endswith(b"\r\n"), out
    rc, out, err = run("--version", "--json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["name"] == "llm-sandbox" and out.decode().strip().endswith("}"), doc
    assert doc["version"] == run("--version")[1].decode().split()[1], doc


def test_bad_usage_is_refused():
    rc, _out, err = run("no-such-command")
    assert rc == EXIT_USAGE and "unknown command 'no-such-command'" in err, (rc, err)


def test_plugins_reports_the_linux_only_backends_absent():
    rc, out, err = run("plugins", "--json")
    assert rc == 0, err
    by_name = {p["name"]: p for p in json.loads(out)}
    for name in LINUX_ONLY:
        assert by_name[name]["status"] == "absent", by_name[name]
        assert "not on Windows" in by_name[name]["error"], by_name[name]
    # nothing claims to work: no backend runs code in this build
    assert all(p["status"] != "ok" for p in by_name.values()), by_name
    rc, text, err = run("plugins")
    assert rc == 0, err
    rows = [line.split() for line in text.decode().splitlines() if line and line[0] != " "]
    assert rows[0][:4] == ["NAME", "KIND", "VERSION", "STATUS"], rows
    assert {r[0]: r[3] for r in rows[1:]}["bwrap"] == "absent", rows


def test_a_plugin_found_is_listed_but_not_loaded(tmp_path):
    """A backend's manifest and library in LLM_SANDBOX_PLUGIN_PATH (a
    Windows path list: ';' between entries, a drive letter in each) is
    found and listed as broken with the loader's reason: no plugin's code
    runs on Windows yet."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    manifest = os.path.join(root, "plugins", "mxc", "mxc.yaml")
    with open(manifest) as f:
        text = f.read()
    library = next(line.split()[1] for line in text.splitlines() if line.startswith("library:"))
    (tmp_path / "mxc.yaml").write_text(text)
    (tmp_path / library).write_bytes(b"")
    win_dir = "Z:" + str(tmp_path).replace("/", "\\")  # wine's Z: is /
    env = {"LLM_SANDBOX_PLUGIN_PATH": win_dir + ";Z:\\nonexistent-plugin-dir"}
    rc, out, err = run("plugins", "--json", env=env)
    assert rc == 0, err
    found = [p for p in json.loads(out) if p["name"] == "mxc"]
    assert len(found) == 1 and found[0]["status"] == "broken", found
    assert "plugins are not loaded by the Windows build yet" in found[0]["error"], found
    assert "nonexistent-plugin-dir" in err, err  # the second entry was read as one
    rc, out, _err = run("doctor", "--json", env=env)
    checks = {c["check"]: c for c in json.loads(out)["checks"]}
    assert rc == 1 and checks["plugin:mxc"]["status"] == "fail", checks.get("plugin:mxc")


def test_doctor_says_what_is_absent_and_fails():
    rc, out, err = run("doctor", "--json")
    assert rc == 1, (rc, err)  # a run is impossible: doctor does not pass
    rep = json.loads(out)
    checks = {c["check"]: c for c in rep["checks"]}
    assert rep["ok"] is False, rep
    for name in HOST_SERVICES:
        assert checks[name]["status"] == "absent", checks[name]
        assert checks[name]["detail"].endswith("not on Windows"), checks[name]
    assert checks["defaults"]["status"] == "fail", checks["defaults"]
    assert "bwrap" in checks["defaults"]["detail"], checks["defaults"]
    assert "server starts and refuses every run" in checks["defaults"]["fix"], checks["defaults"]
    rc, text, _err = run("doctor")
    assert rc == 1 and "[absent] cgroups" in text.decode(), text


def test_arguments_and_file_names_are_utf8(tmp_path):
    """The exe's manifest makes UTF-8 its code page: a config file under a
    non-ASCII name is found and named back in UTF-8, not in cp1252."""
    d = tmp_path / "conf-\u00e9\u4e2d"
    d.mkdir()
    (d / "c.yaml").write_text("LLM_SANDBOX_LOG_LEVEL: warn\n")
    rc, out, err = run("--config", str(d / "c.yaml"), "doctor", "--json")
    checks = {c["check"]: c for c in json.loads(out)["checks"]}
    assert rc == 1 and checks["config"]["status"] == "ok", (checks["config"], err)
    assert checks["config"]["detail"] == "%s: 1 setting" % (d / "c.yaml"), checks["config"]
    rc, _out, err = run("--config", str(d / "missing.yaml"), "doctor")
    assert rc != 0 and str(d / "missing.yaml") in err, (rc, err)


def test_a_run_is_refused_with_the_reason():
    rc, out, err = run("run", "--language", "python", "--code", "print(1)")
    assert rc == EXIT_TOOL, (rc, out, err)
    assert "no sandbox engine" in err and "bwrap" in err, err
    assert out == b"", out


def test_what_needs_a_unix_socket_is_refused():
    rc, _out, err = run("session", "list")
    assert rc == EXIT_TOOL and "not on Windows" in err, (rc, err)
    rc, _out, err = run("serve", "--socket")
    assert rc == EXIT_TOOL and "not on Windows" in err, (rc, err)


def test_mcp_initialize_tools_list_and_refused_runs():
    s = Server()
    try:
        init = s.initialize()
        assert init["serverInfo"]["name"] == "llm-sandbox", init
        tools = {t["name"]: t for t in s.request("tools/list")["result"]["tools"]}
        assert "execute_code" in tools, sorted(tools)
        assert tools["execute_code"]["inputSchema"]["required"] == ["code"], tools["execute_code"]
        resp = s.call_tool("execute_code", {"code": "print(1)", "language": "python"})
        res = resp["result"]
        assert res["isError"] is True, res
        st = res["structuredContent"]
        assert st["status"] == "refused" and st["exit_code"] is None and st["stdout"] == "", st
        assert "no sandbox engine" in st["message"], st
        assert "status: refused" in res["content"][0]["text"], res
        sess = s.call_tool("create_session", {"language": "python"})["result"]
        assert sess["isError"] is True, sess
        assert sess["structuredContent"]["status"] == "refused", sess
        assert "sessions: not on Windows" in sess["structuredContent"]["message"], sess
        # a bad call is still the protocol's error, and the server goes on
        bad = s.request("tools/call", {"name": "no_such_tool", "arguments": {}})
        assert "error" in bad or bad["result"]["isError"], bad
        assert s.request("ping")["result"] == {}
        assert s.finish() == 0, s.stderr.decode(errors="replace")
        assert s.bad_lines == [], s.bad_lines
        assert all(not line.endswith(b"\r\n") for line in s.raw_lines), s.raw_lines[:3]
        assert "every run will be refused" in s.stderr.decode(errors="replace"), s.stderr
    finally:
        s.kill()
