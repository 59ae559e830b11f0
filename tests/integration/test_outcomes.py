# SPDX-License-Identifier: MIT
"""Output, exit codes and the JSON result for every status (issue 2, sections
6 and 9): what the program printed, how it ended, and what the CLI says."""
import concurrent.futures
import signal
import subprocess
import time

import pytest

import conftest
from conftest import (BACKEND, EXIT_TIMEOUT, EXIT_TOOL, RESULT_FIELDS, SBX_BIN, cgroups_enforced,
                      clean_env, code, expected_cli_rc, find_marked, new_mark, other_warnings,
                      run_cli, sbx)

pytestmark = pytest.mark.contract


def test_hello_42():
    res = code("print(6*7)")
    assert res["status"] == "ok"
    assert res["exit_code"] == 0
    assert res["stdout"] == "42\n"
    assert res["stderr"] == ""
    assert res["backend"] == BACKEND
    assert res["language"] == "python"
    assert res["message"] is None
    assert res["limit"] is None
    assert res["_run"].rc == 0
    assert res["_run"].err == b"", "nothing on the CLI's stderr for a clean --json run"


def test_default_run_text_mode_prints_42():
    r = run_cli(["run", "--language", "python", "--code", "print(6*7)"])
    assert r.rc == 0, r
    assert r.out == b"42\n", r


def test_stdout_and_stderr_are_separate():
    res = code("import sys\n"
               "print('to-out-1'); print('to-err-1', file=sys.stderr)\n"
               "print('to-out-2'); sys.stderr.write('to-err-2\\n')\n")
    assert res["status"] == "ok"
    assert res["stdout"] == "to-out-1\nto-out-2\n"
    assert res["stderr"] == "to-err-1\nto-err-2\n"
    assert res["stdout_bytes"] == len(res["stdout"])
    assert res["stderr_bytes"] == len(res["stderr"])
    assert res["stdout_truncated"] is False and res["stderr_truncated"] is False


def test_text_mode_streams_to_the_right_descriptors():
    r = run_cli(["run", "--code", "import sys; print('O'); print('E', file=sys.stderr); "
                 "sys.exit(4)"])
    assert r.out == b"O\n", r
    assert b"E\n" in r.err, r
    assert b"O\n" not in r.err, r
    assert r.rc == 4, r


def test_exit_3_is_error_with_exit_code_3():
    res = code("import sys\nprint('partial')\nsys.exit(3)")
    assert res["status"] == "error"
    assert res["exit_code"] == 3
    assert res["limit"] is None
    assert res["stdout"] == "partial\n"
    assert res["_run"].rc == 3


@pytest.mark.parametrize("status", [0, 1, 2, 3, 42, 100, 123, 126, 255])
def test_cli_exit_code_is_the_programs(status):
    """The CLI exits with the program's exit code, whatever it is (1 too)."""
    res = code("import sys; sys.exit(%d)" % status)
    assert res["exit_code"] == status
    assert res["status"] == ("ok" if status == 0 else "error")
    assert res["_run"].rc == status, (
        "program exited %d, JSON says exit_code %d, but the CLI exited %d"
        % (status, res["exit_code"], res["_run"].rc))


@pytest.mark.parametrize("status", [1, 2, 3])
def test_cli_exit_code_text_mode(status):
    r = run_cli(["run", "--code", "import sys; sys.exit(%d)" % status])
    assert r.rc == status, r


def test_uncaught_exception_is_error_with_traceback():
    res = code("raise ValueError('boom')")
    assert res["status"] == "error"
    assert res["exit_code"] == 1
    assert "ValueError: boom" in res["stderr"]
    assert "/workspace/main.py" in res["stderr"]


def test_syntax_error_is_error():
    res = code("def (:\n")
    assert res["status"] == "error"
    assert res["exit_code"] == 1
    assert "SyntaxError" in res["stderr"]


def test_killed_by_own_signal_9():
    res = code("import os\nprint('before', flush=True)\nos.kill(os.getpid(), 9)\n"
               "print('after')")
    assert res["status"] == "killed"
    assert res["exit_code"] == 137
    assert res["limit"] is None
    assert res["stdout"] == "before\n"
    assert res["_run"].rc == 137


def test_killed_by_sigsegv():
    res = code("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")
    assert res["status"] == "killed"
    assert res["exit_code"] == 128 + 11
    assert res["_run"].rc == 139


def test_code_from_stdin_dash():
    r = sbx("--code", "-", input=b"import sys\nprint('from stdin', sys.argv[0])\n")
    res = r.json
    assert res["status"] == "ok", res
    assert res["stdout"].startswith("from stdin "), res
    # the program's own standard input is empty: the code came on ours
    r2 = sbx("--code", "-", input=b"import sys\nprint(repr(sys.stdin.read()))\n")
    assert r2.json["stdout"] == "''\n", r2.json


def test_code_from_stdin_dash_with_stdin_file(tmp_path):
    f = tmp_path / "data.txt"
    f.write_text("payload")
    r = sbx("--code", "-", "--stdin", str(f),
            input=b"import sys\nprint(sys.stdin.read()[::-1])\n")
    assert r.json["status"] == "ok" and r.json["stdout"] == "daolyap\n", r.json


def test_empty_program_and_no_trailing_newline():
    res = code("")
    assert res["status"] == "ok" and res["stdout"] == "" and res["stdout_bytes"] == 0, res
    res = code("import sys; sys.stdout.write('no newline')")
    assert res["stdout"] == "no newline" and res["stdout_bytes"] == 10, res


def test_code_from_file(tmp_path):
    f = tmp_path / "prog.py"
    f.write_text("import sys\nprint('file says', 7 * 6)\nsys.exit(5)\n")
    r = sbx("--file", str(f))
    res = r.json
    assert res["status"] == "error" and res["exit_code"] == 5, res
    assert res["stdout"] == "file says 42\n", res


def test_stdin_file_feeds_the_program(tmp_path):
    f = tmp_path / "input.txt"
    f.write_bytes(b"hello\nworld\x00\xff")
    res = code("import sys\nd = sys.stdin.buffer.read()\nprint(len(d), d[:5].decode(), "
               "d.count(b'\\n'), d[-1])", "--stdin", str(f))
    assert res["status"] == "ok", res
    assert res["stdout"] == "13 hello 1 255\n", res


def test_stdin_defaults_to_empty():
    res = code("import sys\nprint(repr(sys.stdin.read()))")
    assert res["stdout"] == "''\n", res


def test_stdin_file_large_is_delivered_whole(tmp_path):
    """1 MB of stdin (well under the 16 MiB limit) reaches a program that
    reads it all before printing anything."""
    f = tmp_path / "big.txt"
    f.write_bytes(b"a" * 1_000_000)
    res = code("import sys\nd = sys.stdin.buffer.read()\nprint(len(d))",
               "--stdin", str(f), "--timeout", "10")
    assert res["status"] == "ok", (
        "a silent reader of 1 MB stdin must not hang: status %s after %d ms"
        % (res["status"], res["duration_ms"]))
    assert res["stdout"] == "1000000\n"


def test_stdin_file_large_with_echoing_reader(tmp_path):
    """Control for the test above: a reader that answers as it goes."""
    f = tmp_path / "big.txt"
    f.write_bytes(b"line\n" * 200_000)
    res = code("import sys\nn = 0\nfor line in sys.stdin:\n    n += 1\n"
               "    if n % 10000 == 0: print(n, flush=True)\nprint('total', n)",
               "--stdin", str(f), "--timeout", "20")
    assert res["status"] == "ok", res
    assert res["stdout"].endswith("total 200000\n"), res["stdout"][-200:]


def test_invalid_utf8_output_is_repaired_but_counted():
    res = code("import sys\nsys.stdout.buffer.write(b'\\xff\\xfeA\\n')\n"
               "sys.stderr.buffer.write(b'\\xc3')")
    assert res["status"] == "ok"
    assert res["stdout"] == "\ufffd\ufffdA\n"
    assert res["stdout_bytes"] == 4
    assert res["stderr"] == "\ufffd"
    assert res["stderr_bytes"] == 1


def test_duration_is_measured():
    res = code("import time\ntime.sleep(0.5)")
    assert res["status"] == "ok"
    assert 450 <= res["duration_ms"] < 10000, res
    assert res["duration_ms"] <= res["_run"].wall * 1000 + 50, res


# --- the JSON contract, one case per status -------------------------------

STATUS_CASES = {
    "ok": (["--code", "print(1)"], "ok"),
    "error": (["--code", "import sys; sys.exit(7)"], "error"),
    "timeout": (["--timeout", "1", "--code", "while True: pass"], "timeout"),
    "killed": (["--code", "import os; os.kill(os.getpid(), 9)"], "killed"),
    "oom_or_memoryerror": (["--memory", "64M", "--code",
                            "x = []\nwhile True: x.append(bytearray(1 << 20))"],
                           None),  # oom with a memory cgroup, else error (RLIMIT_AS)
    "refused": (["--language", "cobol", "--code", "1"], "refused"),
}


@pytest.mark.parametrize("case", sorted(STATUS_CASES))
def test_json_contract_every_status(case):
    args, status = STATUS_CASES[case]
    if status is None:
        status = "oom" if cgroups_enforced() else "error"
    r = sbx(*args)  # sbx() checks every field and its type
    res = r.json
    assert set(RESULT_FIELDS) <= set(res), sorted(res)
    assert res["status"] == status, res
    assert r.rc == expected_cli_rc(res), (r.rc, res)
    if status == "refused":
        assert res["exit_code"] is None and res["message"], res
        assert r.rc == EXIT_TOOL
    else:
        assert res["backend"] == BACKEND and res["language"] == "python", res
    if status == "timeout":
        assert r.rc == EXIT_TIMEOUT and res["exit_code"] == 137, res
    if status == "oom":
        assert res["limit"] == "memory" and res["exit_code"] == 137, res
    if not cgroups_enforced():
        # the rlimit fallback is always reported when it is in force
        assert any(w.startswith("memory limit enforced by a fallback: RLIMIT_AS")
                   for w in res["warnings"]) or status == "refused", res
    else:
        assert other_warnings(res) == [], res


def test_warnings_cgroups_vs_fallbacks():
    res = code("print(1)")
    if cgroups_enforced():
        assert other_warnings(res) == [], res["warnings"]
    else:
        w = other_warnings(res)
        assert any(x.startswith("memory limit enforced by a fallback: RLIMIT_AS") for x in w), w
        assert any(x.startswith("pids limit enforced by a fallback: RLIMIT_NPROC") for x in w), w
        assert any(x.startswith("cpu limit not enforced") for x in w), w
        assert len(w) == 3, w


def test_concurrent_runs_all_succeed():
    """Several CLI runs at once (an evaluation harness, several MCP calls):
    each must run, none may be refused because of another."""
    n = 6

    def one(i):
        return run_cli(["run", "--json", "--code", "import time; time.sleep(0.3); print(%d)" % i],
                       env=clean_env())

    with concurrent.futures.ThreadPoolExecutor(n) as pool:
        runs = list(pool.map(one, range(n)))
    bad = [(r.json["status"], r.json["message"]) for r in runs if r.json["status"] != "ok"]
    assert not bad, "%d of %d concurrent runs failed: %s" % (len(bad), n, bad[:3])
    assert sorted(r.json["stdout"] for r in runs) == ["%d\n" % i for i in range(n)]


def test_help_and_version():
    r = run_cli(["run", "--help"])
    assert r.rc == 0 and b"--timeout" in r.out, r
    r = run_cli(["--version"])
    assert r.rc == 0 and r.out.startswith(b"llm-sandbox "), r
    r = run_cli(["frobnicate"])
    assert r.rc == 2 and b"unknown command" in r.err, r


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_to_cli_cancels_the_run(sig):
    """Ctrl-C (or SIGTERM) on the CLI cancels the run: status cancelled, the
    sandbox killed at once, exit 130, output so far kept."""
    mark = new_mark()
    p = subprocess.Popen([SBX_BIN, "run", "--json", "--code",
                          "import time\nprint('started', flush=True)\ntime.sleep(60)"],
                         env=clean_env(mark_value=mark), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd="/")
    conftest._cli_pids.append(p.pid)
    deadline = time.monotonic() + 10
    while not find_marked(mark, "python3") and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)  # let it print
    t0 = time.monotonic()
    p.send_signal(sig)
    out, err = p.communicate(timeout=20)
    took = time.monotonic() - t0
    res = conftest.parse_single_json(out)
    assert res["status"] == "cancelled", res
    assert res["exit_code"] == 137 and res["limit"] is None, res
    assert res["stdout"] == "started\n", res
    assert p.returncode == 130, (p.returncode, err)
    assert took < 3, "cancelling took %.1f s" % took
