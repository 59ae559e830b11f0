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
    # no backend claims to work: none runs code in this build; the
    # language plugins are DLLs loaded like on Linux
    assert all(p["status"] != "ok" for p in by_name.values() if p["kind"] == "backend"), by_name
    rc, text, err = run("plugins")
    assert rc == 0, err
    rows = [line.split() for line in text.decode().splitlines() if line and line[0] != " "]
    assert rows[0][:4] == ["NAME", "KIND", "VERSION", "STATUS"], rows
    assert {r[0]: r[3] for r in rows[1:]}["bwrap"] == "absent", rows


def win_path(path):
    return "Z:" + str(path).replace("/", "\\")  # wine's Z: is /


def test_a_library_that_is_no_dll_is_reported_broken(tmp_path):
    """A backend's manifest in LLM_SANDBOX_PLUGIN_PATH (a Windows path
    list: ';' between entries, a drive letter in each) is found; its
    library NAME.so is looked for as NAME.dll, and one that is no DLL is
    reported broken with the loader's reason."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    manifest = os.path.join(root, "plugins", "mxc", "mxc.yaml")
    with open(manifest) as f:
        text = f.read()
    (tmp_path / "mxc.yaml").write_text(text)
    (tmp_path / "mxc.dll").write_bytes(b"")
    env = {"LLM_SANDBOX_PLUGIN_PATH": win_path(tmp_path) + ";Z:\\nonexistent-plugin-dir"}
    rc, out, err = run("plugins", "--json", env=env)
    assert rc == 0, err
    found = [p for p in json.loads(out) if p["name"] == "mxc"]
    assert len(found) == 1 and found[0]["status"] == "broken", found
    assert "cannot load" in found[0]["error"] and "mxc.dll" in found[0]["error"], found
    assert "nonexistent-plugin-dir" in err, err  # the second entry was read as one
    rc, out, _err = run("doctor", "--json", env=env)
    checks = {c["check"]: c for c in json.loads(out)["checks"]}
    assert rc == 1 and checks["plugin:mxc"]["status"] == "fail", checks.get("plugin:mxc")


def test_language_plugins_are_loaded_as_dlls():
    """Each in-tree language plugin is built as NAME.dll beside its
    manifest and loaded through libltdl: its descriptor agreed with the
    manifest, its init ran, and its version_pattern passed the Windows
    build's regular-expression subset (core/src/platform/minire.c)."""
    rc, out, err = run("plugins", "--json")
    assert rc == 0, err
    langs = {p["name"]: p for p in json.loads(out) if p["kind"] == "language"}
    for name in ("python", "javascript", "go", "cpp", "java", "r", "ruby"):
        assert langs[name]["status"] == "ok", langs.get(name)
    assert langs["python"]["source_file"] == "main.py", langs["python"]


def test_a_version_pattern_outside_the_subset_is_refused(tmp_path):
    """A language manifest whose version_pattern the subset does not
    cover is refused with what it used, never matched by a guess."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "langs", "python", "python.yaml")) as f:
        text = f.read()
    text = text.replace("name: python\n", "name: pyalt\n", 1)
    text = "\n".join(line for line in text.splitlines() if not line.startswith("library:"))
    text = text.replace('version_pattern: "Python ([0-9][0-9.]*)"',
                        'version_pattern: "(Python|PyPy) ([0-9][0-9.]*)"')
    assert "PyPy" in text and "name: pyalt" in text
    (tmp_path / "pyalt.yaml").write_text(text + "\n")
    rc, out, err = run("plugins", "--json", env={"LLM_SANDBOX_PLUGIN_PATH": win_path(tmp_path)})
    assert rc == 0, err
    found = [p for p in json.loads(out) if p["name"] == "pyalt"]
    assert len(found) == 1 and found[0]["status"] == "broken", found
    assert "alternation (|) is outside the subset" in found[0]["error"], found


def test_the_host_table_through_a_backend_plugin():
    """hostcheck.dll (tests/windows/hostcheck_plugin.c), a backend plugin
    of the tests', is loaded by the real llm-sandbox.exe and its probe
    checks the host table the core lends it (core/src/platform/win_host.c)
    from the plugin's side of the ABI, against proc_stub.exe: spawning
    with three pipes, the exact environment, exit codes as wait statuses,
    a timed-out wait and a kill that ends the whole tree, run_capture's
    deadline, memfd_new, the embedded seccomp policy, and the refusals of
    the Linux services."""
    plugins = os.environ.get("SBX_WINDOWS_TEST_PLUGINS")
    bindir = os.environ.get("SBX_WINDOWS_BINDIR")
    if not plugins or not bindir:
        pytest.skip("SBX_WINDOWS_TEST_PLUGINS and SBX_WINDOWS_BINDIR name the test plugins")
    env = {"LLM_SANDBOX_PLUGIN_PATH": win_path(plugins),
           "LLM_SANDBOX_HOSTCHECK_STUB": win_path(os.path.join(bindir, "proc_stub.exe"))}
    rc, out, err = run("plugins", "--json", env=env)
    assert rc == 0, err
    hc = [p for p in json.loads(out) if p["name"] == "hostcheck"]
    assert len(hc) == 1, hc
    hc = hc[0]
    assert hc["status"] == "ok" and hc["probe"] == "ok", hc
    assert hc["controls"]["wall_time"]["note"] == "host table: 8 checks passed", hc["controls"]


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
    assert "no backend plugin named 'bwrap' is installed" in err, err
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
        assert "no backend plugin named 'bwrap'" in st["message"], st
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
