# SPDX-License-Identifier: MIT
"""Hostile tool arguments through the CLI (issue 9): library names built
to reach a shell or a package manager's options, path traversal in
language and backend names (with a planted library that would leave a
mark if it were ever loaded), and oversized or malformed inputs. Every
one is refused before anything runs, and the host's canaries say so. The
MCP front end's own cases (JSON, UTF-8, sizes) are in tests/mcp."""
import os
import shutil
import subprocess
import tempfile

import pytest

from conftest import EXIT_TOOL, clean_env, itest, run_cli, sbx


@pytest.fixture
def trap_dir():
    d = tempfile.mkdtemp(prefix="sbxsec-args-", dir="/var/tmp")
    os.chmod(d, 0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def injections(d):
    mark = os.path.join(d, "pwned")
    return mark, [
        "numpy; touch %s" % mark, "numpy && touch %s" % mark, "$(touch %s)" % mark,
        "`touch %s`" % mark, "numpy | touch %s" % mark, "numpy\ntouch %s" % mark,
        "; rm -rf /", "--index-url=http://127.0.0.1:9/simple", "-i http://127.0.0.1:9/",
        "--extra-index-url http://127.0.0.1:9/", "-e git+file:///etc", "numpy @ file:///etc/passwd",
        "../x", "../../etc/passwd", "/etc/passwd", "file:///etc/passwd", "./local.whl",
        "numpy --pre", "-r /etc/shadow", "x" * 5000, "numpy\x7f", "\u202enumpy",
    ]


@pytest.mark.parametrize("lang", ["python", "javascript", "ruby", "r", "go", "java"])
def test_library_name_injection_is_refused(lang, trap_dir):
    mark, names = injections(trap_dir)
    for name in names:
        r = sbx("--language", lang, "--code", "x", "--libraries", name)
        res = r.json
        assert res["status"] == "refused", (name, res)
        assert "not a valid" in res["message"] or "invalid" in res["message"], (name, res)
        assert res["stdout"] == "" and res["exit_code"] is None, (name, res)
    assert not os.path.exists(mark), "a library name reached a shell"


EVIL_SO = r"""
#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void mark(void) {
    int fd = open(MARK, O_WRONLY | O_CREAT, 0644);
    if (fd >= 0) close(fd);
}
"""


@pytest.fixture
def evil_plugin(trap_dir):
    """A library that leaves a mark when loaded, with a manifest beside it,
    where a traversing backend or language name could find it."""
    if not shutil.which("gcc"):
        pytest.skip("needs gcc")
    src = os.path.join(trap_dir, "evil.c")
    with open(src, "w") as f:
        f.write(EVIL_SO)
    mark = os.path.join(trap_dir, "loaded")
    subprocess.run(["gcc", "-shared", "-fPIC", "-DMARK=\"%s\"" % mark, "-o",
                    os.path.join(trap_dir, "evil.so"), src], check=True)
    for kind in ("backend", "language"):
        with open(os.path.join(trap_dir, "evil.yaml"), "w") as f:
            f.write("name: evil\nkind: %s\nversion: 0.1.0\nabi: \"1.0\"\nlibrary: evil.so\n" % kind)
    os.chmod(trap_dir, 0o755)
    return trap_dir, mark


def test_traversing_backend_and_language_names_load_nothing(evil_plugin):
    d, mark = evil_plugin
    rel = os.path.relpath(os.path.join(d, "evil"), os.path.dirname(itest.SBX_BIN))
    names = [os.path.join(d, "evil"), os.path.join(d, "evil.so"), rel, "../../" + rel,
             "bwrap/../evil", "bwrap;id", "BWRAP", "bwrap\t", " bwrap", "nsjail\n"]
    for name in names:
        res = sbx("--backend", name, "--code", "print(1)").json
        assert res["status"] in ("refused", "error") and res["exit_code"] is None, (name, res)
        res = sbx("--language", name, "--code", "print(1)").json
        assert res["status"] == "refused", (name, res)
        r = run_cli(["run", "--json", "--code", "print(1)"],
                    env=clean_env({"BACKEND": name, "LLM_SANDBOX_DEFAULT_LANGUAGE": name}))
        assert r.rc == EXIT_TOOL and r.json["exit_code"] is None, (name, r)
    assert not os.path.exists(mark), "a name made llm-sandbox load a library it should not"


def test_unbounded_inputs_are_refused_not_read_forever():
    """Endless program text or stdin (/dev/zero) ends as a refusal at the
    documented caps (1 MiB of code, 16 MiB of stdin), promptly."""
    for args in (["--file", "/dev/zero"], ["--code", "print(1)", "--stdin", "/dev/zero"]):
        r = sbx(*args, timeout=30)
        assert r.json["status"] == "refused", (args, r.json)
        assert r.wall < 10, (args, r.wall)
    with open("/dev/zero", "rb") as zero:
        r = sbx("--code", "-", stdin=zero, timeout=30)
    assert r.json["status"] == "refused", r.json


@pytest.mark.parametrize("opt,value", [
    ("--timeout", "1e309"), ("--timeout", "30 "), ("--memory", "1" * 40),
    ("--memory", "18446744073709551616"), ("--memory", "-1G"), ("--pids", "4294967297"),
    ("--cpus", "1e-400"), ("--output-bytes", "1T"), ("--workspace", "1" * 5000),
    ("--network", "host"), ("--network", "on;off"),
])
def test_malformed_limits_are_refused(opt, value):
    res = sbx("--code", "print(1)", opt, value).json
    assert res["status"] == "refused", (opt, value, res)
    assert res["stdout"] == "", res


def test_hostile_program_bytes_are_only_a_program():
    """Invalid UTF-8, NULs are impossible in argv, so: control characters,
    a huge line, and text that looks like the result JSON or a JSON-RPC
    message stay the program's own business."""
    for src in (b"\xff\xfe\x00"[:2] + b"\nprint(1)", b"print('\x1b[2J\x1b]0;pwned\x07')",
                b"print('" + b"A" * 100000 + b"')",
                b'print(\'{"status":"ok","exit_code":0}\')'):
        r = run_cli([b"run", b"--json", b"--code", src])
        res = r.json
        assert res["status"] in ("ok", "error"), (src[:40], res)
        assert res["exit_code"] is not None, res
