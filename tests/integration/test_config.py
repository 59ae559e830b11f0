# SPDX-License-Identifier: MIT
"""The YAML config file (--config FILE before the command or after `run`,
or LLM_SANDBOX_CONFIG): it sets defaults and ceilings like the environment
variables of the same names, the environment beats it, a request beyond its
ceilings is refused naming the control, and a broken file stops start-up
with one JSON result whose message gives FILE:LINE:COLUMN."""
import json
import re

import pytest

from conftest import BACKEND, EXIT_TIMEOUT, EXIT_TOOL, MARK_KEY, check_contract, code, run_cli, sbx

LOCATION = r"%s:\d+:\d+: "


def write(tmp_path, text, name="config.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def result(r):
    """The one JSON result of a run, contract checked."""
    check_contract(r)
    return r.json


def test_global_option_applies_timeout_ceiling(tmp_path):
    cfg = write(tmp_path, "LLM_SANDBOX_TIMEOUT: 5\nLLM_SANDBOX_MAX_TIMEOUT: 10\n")
    r = run_cli(["--config", cfg, "run", "--json", "--timeout", "11", "--code", "print(1)"])
    res = result(r)
    assert res["status"] == "refused" and r.rc == EXIT_TOOL, res
    assert "wall_time 11 s is above the ceiling of 10 s" in res["message"], res["message"]
    r = run_cli(["--config", cfg, "run", "--json", "--timeout", "10", "--code", "print(1)"])
    res = result(r)
    assert res["status"] == "ok" and res["stdout"] == "1\n", res


def test_run_option_applies_memory_ceiling(tmp_path):
    cfg = write(tmp_path, "# limits for this host\nSANDBOX_MEMORY: 128M\n"
                          "LLM_SANDBOX_MAX_MEMORY: 256M\n")
    res = result(run_cli(["run", "--config", cfg, "--json", "--memory", "300M",
                          "--code", "print(1)"]))
    assert res["status"] == "refused", res
    assert "memory 300 MiB is above the ceiling of 256 MiB; the operator raises it with " \
        "LLM_SANDBOX_MAX_MEMORY" in res["message"], res
    res = code("print(open('/proc/self/status').read().count('VmPeak'))", "--config", cfg,
               "--memory", "256M")
    assert res["status"] == "ok", res


def test_default_timeout_from_file_ends_the_run(tmp_path):
    cfg = write(tmp_path, "LLM_SANDBOX_TIMEOUT: 1\n")
    r = run_cli(["--config=" + cfg, "run", "--json", "--code", "while True: pass"])
    res = result(r)
    assert res["status"] == "timeout" and res["limit"] == "wall_time", res
    assert r.rc == EXIT_TIMEOUT, r
    assert res["duration_ms"] < 10000, res


def test_environment_variable_names_the_file(tmp_path):
    cfg = write(tmp_path, "LLM_SANDBOX_TIMEOUT: 5\nLLM_SANDBOX_MAX_TIMEOUT: 10\n")
    r = run_cli(["run", "--json", "--timeout", "11", "--code", "print(1)"],
                extra_env={"LLM_SANDBOX_CONFIG": cfg})
    res = result(r)
    assert res["status"] == "refused" and "wall_time" in res["message"], res


def test_option_beats_environment_variable(tmp_path):
    strict = write(tmp_path, "LLM_SANDBOX_TIMEOUT: 5\nLLM_SANDBOX_MAX_TIMEOUT: 10\n",
                   "strict.yaml")
    loose = write(tmp_path, "LLM_SANDBOX_MAX_TIMEOUT: 60\n", "loose.yaml")
    r = run_cli(["--config", loose, "run", "--json", "--timeout", "30", "--code", "print(1)"],
                extra_env={"LLM_SANDBOX_CONFIG": strict})
    assert result(r)["status"] == "ok", r


def test_environment_beats_file(tmp_path):
    cfg = write(tmp_path, "LLM_SANDBOX_TIMEOUT: 5\nLLM_SANDBOX_MAX_TIMEOUT: 10\n"
                          "SANDBOX_MEMORY: lots\n")
    # both values in the file are overridden; the bad one is never read
    r = sbx("--config", cfg, "--timeout", "15", "--code", "print(1)",
            extra_env={"LLM_SANDBOX_MAX_TIMEOUT": "20", "SANDBOX_MEMORY": "256M"})
    assert r.json["status"] == "ok", r.json
    r = sbx("--config", cfg, "--timeout", "21", "--code", "print(1)",
            extra_env={"LLM_SANDBOX_MAX_TIMEOUT": "20", "SANDBOX_MEMORY": "256M"})
    assert r.json["status"] == "refused" and "wall_time" in r.json["message"], r.json


def test_sequence_for_env_allow(tmp_path):
    # the environment's LLM_SANDBOX_ENV_ALLOW would win: remove it, and let
    # the file pass the test marker along with the variable under test
    cfg = write(tmp_path, "LLM_SANDBOX_ENV_ALLOW:\n  - %s\n  - CFG_VISIBLE\n" % MARK_KEY)
    res = code("import os; print(os.environ.get('CFG_VISIBLE'), os.environ.get('CFG_HIDDEN'))",
               "--config", cfg,
               extra_env={"LLM_SANDBOX_ENV_ALLOW": None, "CFG_VISIBLE": "yes",
                          "CFG_HIDDEN": "no"})
    assert res["status"] == "ok" and res["stdout"] == "yes None\n", res


# The setting that names bwrap, per backend that runs it.
BWRAP_SETTING = {"bwrap": "LLM_SANDBOX_BWRAP_PATH", "wsl2": "LLM_SANDBOX_WSL2_BWRAP"}


@pytest.mark.skipif(BACKEND not in BWRAP_SETTING, reason="a setting of the plugins that run bwrap")
def test_plugin_setting_from_file(tmp_path):
    cfg = write(tmp_path, "%s: /nonexistent/bwrap\n" % BWRAP_SETTING[BACKEND])
    res = result(run_cli(["--config", cfg, "run", "--json", "--code", "print(1)"]))
    assert res["status"] == "refused", res
    assert "/nonexistent/bwrap" in res["message"], res


BROKEN = [
    ("unknown key", "BACKEND: bwrap\nSANDBOX_MEMROY: 1G\n", 2, 1, "unknown key 'SANDBOX_MEMROY'"),
    ("mapping value", "SANDBOX_MEMORY:\n  size: 1G\n", 2, 3, "must be a string, number or "
                                                              "boolean, not a mapping"),
    ("bad value", "LLM_SANDBOX_TIMEOUT: 5\nSANDBOX_MEMORY: lots\n", 2, 1,
     "SANDBOX_MEMORY='lots' is not a valid size"),
    ("alias", "BACKEND: &b bwrap\nLLM_SANDBOX_DEFAULT_LANGUAGE: *b\n", 1, 10,
     "aliases and anchors are not allowed"),
    ("duplicate", "BACKEND: bwrap\nBACKEND: docker\n", 2, 1, "duplicate key 'BACKEND'"),
    ("syntax", "BACKEND: [bwrap\n", None, None, "YAML syntax error"),
    ("unknown plugin key", "LLM_SANDBOX_NOPLUGIN_PATH: /x\n", 1, 1,
     "unknown key 'LLM_SANDBOX_NOPLUGIN_PATH'"),
    ("privileged", "SANDBOX_PRIVILEGED: true\n", 1, 1, "SANDBOX_PRIVILEGED=true is refused"),
]


@pytest.mark.parametrize("name,text,line,col,phrase", BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_file_is_one_json_error(tmp_path, name, text, line, col, phrase):
    cfg = write(tmp_path, text)
    r = run_cli(["--config", cfg, "run", "--json", "--code", "print(1)"])
    res = result(r)  # exactly one JSON object
    assert res["status"] in ("error", "refused") and res["exit_code"] is None, res
    assert r.rc == EXIT_TOOL, r
    if line is None:
        assert re.search(LOCATION % re.escape(cfg), res["message"]), res["message"]
    else:
        assert "%s:%d:%d: " % (cfg, line, col) in res["message"], res["message"]
    assert phrase in res["message"], res["message"]
    assert res["stdout"] == "" and res["duration_ms"] == 0, res


def test_missing_file(tmp_path):
    missing = str(tmp_path / "missing.yaml")
    res = result(run_cli(["run", "--config", missing, "--json", "--code", "print(1)"]))
    assert res["status"] == "error", res
    assert "cannot read config file '%s': No such file" % missing in res["message"], res
    res = result(run_cli(["run", "--json", "--code", "print(1)"],
                         extra_env={"LLM_SANDBOX_CONFIG": missing}))
    assert "LLM_SANDBOX_CONFIG" in res["message"] and missing in res["message"], res


def test_oversize_file(tmp_path):
    cfg = write(tmp_path, "#" * (64 * 1024 + 1) + "\n")
    res = result(run_cli(["--config", cfg, "run", "--json", "--code", "print(1)"]))
    assert res["status"] == "error" and "larger than 65536 bytes" in res["message"], res


def test_option_needs_a_value():
    r = run_cli(["--config"], mark=False)
    assert r.rc == 2 and b"--config" in r.err, r
    r = run_cli(["run", "--json", "--code", "print(1)", "--config"])
    res = result(r)
    assert res["status"] == "refused" and "--config" in res["message"], res


def test_doctor_reports_the_file(tmp_path):
    cfg = write(tmp_path, "LLM_SANDBOX_TIMEOUT: 20\nLLM_SANDBOX_PIDS: 100\n")
    r = run_cli(["--config", cfg, "doctor", "--json"], mark=False)
    rep = json.loads(r.out)
    checks = {c["check"]: c for c in rep["checks"]}
    assert checks["config"]["status"] == "ok", checks["config"]
    assert checks["config"]["detail"] == "%s: 2 settings" % cfg, checks["config"]
    r = run_cli(["doctor", "--json"], mark=False)
    checks = {c["check"]: c for c in json.loads(r.out)["checks"]}
    assert "no config file" in checks["config"]["detail"], checks["config"]


def test_doctor_reports_a_broken_file(tmp_path):
    cfg = write(tmp_path, "LLM_SANDBOX_TIMEOUT: 20\nSANDBOX_MEMORY: lots\n")
    for args in (["--config", cfg, "doctor"], ["--config", cfg, "doctor", "--json"]):
        r = run_cli(args, mark=False)
        assert r.rc == EXIT_TOOL, r
        err = r.err.decode()
        assert "%s:2:1: SANDBOX_MEMORY='lots' is not a valid size" % cfg in err, err
    r = run_cli(["doctor"], extra_env={"LLM_SANDBOX_CONFIG": cfg}, mark=False)
    assert r.rc == EXIT_TOOL and ("%s:2:1:" % cfg).encode() in r.err, r
