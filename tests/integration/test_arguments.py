# SPDX-License-Identifier: MIT
"""Bad arguments and policy ceilings: every one ends as exactly one JSON
object with status refused, a message saying why, and nothing run (issue 2,
sections 5 and 9)."""
import json
import os
import re
import sys

import pytest

from conftest import (EXIT_TOOL, RESULT_FIELDS, SBX_SOURCE_DIR, cgroups_enforced, check_contract,
                      clean_env, code, run_cli, sbx)


sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "mcp"))
import mcptest  # noqa: E402  (tests/mcp: the JSON-RPC client)


def refused(args, extra_env=None, input=None, rc=EXIT_TOOL):
    """Run, expect one JSON object with status refused and exit status rc
    (2 for a command line that does not parse); return it."""
    r = run_cli(["run", "--json"] + list(args), extra_env=extra_env, input=input)
    res = r.json  # exactly one JSON object on one line
    assert res["status"] == "refused", (args, res)
    assert res["exit_code"] is None, res
    assert isinstance(res.get("message"), str) and res["message"], res
    assert r.rc == rc, (r.rc, res)
    return res, r


def test_unknown_language():
    res, _ = refused(["--language", "cobol", "--code", "1"])
    assert "unknown language 'cobol'" in res["message"]
    assert "python" in res["message"], "the message lists what is available"


def test_language_alias_accepted():
    res = code("import sys; print(sys.version_info[0])", "--language", "python3")
    assert res["status"] == "ok" and res["stdout"] == "3\n", res
    assert res["language"] == "python", "aliases are reported by the canonical name"


def test_unknown_backend_micromamba_lists_available():
    res, _ = refused(["--backend", "micromamba", "--code", "print(1)"])
    assert "no backend plugin named 'micromamba' is installed here" in res["message"], res
    assert "installed: " in res["message"] and "bwrap" in res["message"], res["message"]


def test_missing_backend_lists_every_installed_one():
    """The core keeps no table of backend names (ABI 1.4: names and aliases
    come from manifests): a name no plugin answers to is refused with every
    backend plugin found, whether or not this process loaded it."""
    res, _ = refused(["--backend", "hyperlight", "--code", "print(1)"])
    msg = res["message"]
    assert "'hyperlight'" in msg and "a distribution may ship each backend" in msg, msg
    installed = msg.split("installed: ", 1)[1]
    for name in ("bwrap", "nsjail"):
        assert name in installed, msg


def test_backend_alias_bubblewrap_reported_as_bwrap():
    res = code("print(6*7)", "--backend", "bubblewrap")
    assert res["status"] == "ok" and res["stdout"] == "42\n", res
    assert res["backend"] == "bwrap"


def test_backend_from_environment():
    r = sbx("--code", "print(1)", extra_env={"BACKEND": "bubblewrap"})
    assert r.json["backend"] == "bwrap" and r.json["status"] == "ok", r.json
    res, _ = refused(["--code", "print(1)"], extra_env={"BACKEND": "micromamba"})
    assert "micromamba" in res["message"]


@pytest.mark.parametrize("value", ["-1", "0", "abc", "", "1e10", "nan", "inf", "5s", "-0"])
def test_bad_timeout_refused(value):
    res, _ = refused(["--timeout", value, "--code", "print(1)"])
    assert value in res["message"] or value == "", res["message"]


def test_timeout_above_ceiling_refused_not_clamped():
    res, _ = refused(["--timeout", "301", "--code", "print(1)"])
    assert "wall_time" in res["message"], res["message"]
    assert "300000" in res["message"] or "300 s" in res["message"], res["message"]
    res, _ = refused(["--timeout", "100000", "--code", "print(1)"])
    assert "wall_time" in res["message"]


def test_timeout_at_ceiling_accepted():
    res = code("print('ok')", "--timeout", "300")
    assert res["status"] == "ok", res


def test_memory_above_ceiling_refused():
    """The built-in ceiling (2 GiB) is above the default (512 MiB); the
    refusal speaks human units and names the operator's setting."""
    res, _ = refused(["--memory", "4G", "--code", "print(1)"])
    assert res["message"] == "memory 4 GiB is above the ceiling of 2 GiB; the operator raises " \
        "it with LLM_SANDBOX_MAX_MEMORY", res["message"]
    # rounded, both would read "2 GiB": the exact sizes then
    res, _ = refused(["--memory", "2049M", "--code", "print(1)"])
    assert res["message"].startswith("memory 2148532224 bytes is above the ceiling of "
                                     "2147483648 bytes;"), res["message"]


def test_fresh_install_accepts_more_than_the_defaults():
    """--memory 1G (and more CPU, processes, output) runs on a fresh
    install: the ceilings sit above the defaults (issue 23)."""
    args = ["--memory", "1G", "--pids", "512", "--output-bytes", "4M", "--workspace", "1G",
            "--file-size", "512M"]
    if cgroups_enforced():  # a CPU quota needs a cgroup: refused without one
        args += ["--cpus", "2"]
    r = sbx(*args, "--code", "print('roomy')")
    assert r.json["status"] == "ok" and r.json["stdout"] == "roomy\n", r.json


def test_memory_out_of_range_is_refused_not_wrapped():
    """17179869185G is 2^64 + 1 GiB bytes: a 64-bit shift made it 1 GiB,
    under a 64G ceiling, and the run went on with 1 GiB (issue 17). The one
    parser refuses it, naming the value."""
    res, _ = refused(["--memory", "17179869185G", "--code", "print(1)"],
                     extra_env={"LLM_SANDBOX_MAX_MEMORY": "64G"})
    assert "out of range" in res["message"] and "17179869185G" in res["message"], res


def test_memory_with_a_fraction_runs():
    r = sbx("--memory", "1.5G", "--code", "print(3)", extra_env={"LLM_SANDBOX_MAX_MEMORY": "2G"})
    assert r.json["status"] == "ok" and r.json["stdout"] == "3\n", r.json
    res, _ = refused(["--memory", "1.5G", "--code", "print(1)"],
                     extra_env={"LLM_SANDBOX_MAX_MEMORY": "1G"})
    assert "memory 1.5 GiB is above the ceiling of 1 GiB" in res["message"], res["message"]


def mcp_run(arguments, env=None):
    """One execute_code through a real MCP server; its structured result."""
    s = mcptest.Server(env=clean_env(env))
    try:
        s.initialize()
        r = s.call_tool("execute_code", arguments, timeout=120)
        return r["result"]["structuredContent"]
    finally:
        assert s.finish(30) == 0, s.stderr.decode(errors="replace")


@pytest.mark.parametrize("arguments,phrase", [
    ({"memory": "17179869185G"}, "out of range"),
    ({"memory": "3G"}, "memory 3 GiB is above the ceiling of 2 GiB; the operator raises it "
                        "with LLM_SANDBOX_MAX_MEMORY"),
    ({"memory": "lots"}, "not a size"),
    ({"memory": 1.5}, "'memory'"),
    ({"cpus": "8"}, "cpu 8 cores is above the ceiling of 4 cores"),
    ({"pids": 0}, "greater than 0"),
    ({"pids": "100000"}, "pids 100000 processes is above the ceiling of 1024 processes"),
    ({"network": "on"}, "the operator allows it with LLM_SANDBOX_NETWORK"),
    ({"timeout": 301}, "wall_time 301 s is above the ceiling of 300 s")])
def test_mcp_controls_are_the_cli_controls(arguments, phrase):
    """execute_code narrows the policy with the CLI's controls, in its units
    and under the same ceilings (issue 17): what the CLI refuses, it refuses
    with the same words."""
    res = mcp_run(dict(code="print(1)", **arguments))
    assert res["status"] == "refused" and phrase in res["message"], (arguments, res)


def test_mcp_controls_narrow_a_run():
    arguments = {"code": "print('narrowed')", "memory": "256M", "pids": "64", "network": "off",
                 "timeout": 20}
    if cgroups_enforced():  # a CPU quota needs a cgroup: refused without one
        arguments["cpus"] = 0.5
    res = mcp_run(arguments)
    assert res["status"] == "ok" and res["stdout"] == "narrowed\n", res


def test_mcp_and_cli_share_the_default_language():
    """No language: the server's default, LLM_SANDBOX_DEFAULT_LANGUAGE, for
    MCP as for the CLI (the MCP layer no longer says python itself)."""
    env = {"LLM_SANDBOX_DEFAULT_LANGUAGE": "javascript"}
    res = mcp_run({"code": "console.log(6 * 7)"}, env)
    assert res["status"] == "ok" and res["language"] == "javascript", res
    assert res["stdout"] == "42\n", res
    r = sbx("--code", "console.log(6 * 7)", extra_env=env)
    assert r.json["language"] == "javascript" and r.json["stdout"] == "42\n", r.json


@pytest.mark.parametrize("opt,ctl", [("--output-bytes", "output"), ("--file-size", "file_size"),
                                     ("--workspace", "workspace"), ("--pids", "pids")])
def test_other_ceilings_refused(opt, ctl):
    big = {"--pids": "100000"}.get(opt, "100G")
    res, _ = refused([opt, big, "--code", "print(1)"])
    setting = {"output": "LLM_SANDBOX_MAX_OUTPUT_BYTES", "file_size": "LLM_SANDBOX_MAX_FILE_SIZE",
               "workspace": "LLM_SANDBOX_MAX_WORKSPACE_SIZE", "pids": "LLM_SANDBOX_MAX_PIDS"}[ctl]
    unit = "processes" if ctl == "pids" else "GiB"
    assert res["message"].startswith(ctl + " ") and " %s is above the ceiling of " % unit \
        in res["message"] and res["message"].endswith("raises it with " + setting), res


def test_cpus_above_ceiling_refused():
    res, _ = refused(["--cpus", "5", "--code", "print(1)"])
    assert res["message"] == "cpu 5 cores is above the ceiling of 4 cores; the operator " \
        "raises it with LLM_SANDBOX_MAX_CPUS", res["message"]


@pytest.mark.parametrize("opt,value", [("--memory", "0"), ("--memory", "-5M"),
                                       ("--memory", "lots"), ("--memory", "12X"),
                                       ("--pids", "0"), ("--pids", "-3"), ("--cpus", "0"),
                                       ("--cpus", "-1"), ("--output-bytes", "0"),
                                       ("--network", "bogus"), ("--network", "host")])
def test_bad_limit_values_refused(opt, value):
    res, _ = refused([opt, value, "--code", "print(1)"])
    assert res["message"]


def test_run_help_documents_every_network_mode():
    """Each mode the core knows (its own refusal lists them) is in `run
    --help` with when it is allowed, and what the help says holds: with
    the default configuration only off runs; registries and allowlist are
    refused for programs whatever the configuration."""
    res, _ = refused(["--network", "bogus", "--code", "print(1)"])
    modes = re.search(r"one of ([a-z, ]+)", res["message"]).group(1).split(", ")
    assert set(modes) == {"off", "registries", "allowlist", "on", "host"}, modes
    text = run_cli(["run", "--help"]).out.decode()
    block = text[text.index("--network"):text.index("--json")]
    for mode in modes:
        assert re.search(r"^\s+%s\s+\S" % mode, block, re.M), (mode, block)
    assert "LLM_SANDBOX_ALLOW_HOST_NETWORK=1" in block and "library installs" in block
    for mode in ("on", "host", "registries", "allowlist"):
        res, _ = refused(["--network", mode, "--code", "print(1)"])
        assert "network" in res["message"], res
    for mode in ("registries", "allowlist"):
        res, _ = refused(["--network", mode, "--code", "print(1)"],
                         extra_env={"LLM_SANDBOX_NETWORK": "on"})
        assert "library installs" in res["message"], res


def test_network_on_needs_configuration():
    res, _ = refused(["--network", "on", "--code", "print(1)"])
    assert "network" in res["message"] and "off" in res["message"], res["message"]


def test_code_bigger_than_1mib_refused(tmp_path):
    f = tmp_path / "big.py"
    f.write_bytes(b"#" * (1024 * 1024) + b"\n")
    res, _ = refused(["--file", str(f)])
    assert "1048577" in res["message"] and "1048576" in res["message"], res["message"]
    res, _ = refused(["--code", "-"], input=b"#" * (1024 * 1024 + 100))
    assert "code" in res["message"]


def test_code_of_exactly_1mib_runs(tmp_path):
    f = tmp_path / "big.py"
    body = b"print('edge')\n"
    f.write_bytes(body + b"#" * (1024 * 1024 - len(body)))
    r = sbx("--file", str(f))
    assert r.json["status"] == "ok" and r.json["stdout"] == "edge\n", r.json


def test_stdin_above_16mib_refused(tmp_path):
    f = tmp_path / "in.bin"
    f.write_bytes(b"\0" * (16 * 1024 * 1024 + 1))
    res, _ = refused(["--stdin", str(f), "--code", "print(1)"])
    assert "stdin" in res["message"], res["message"]


@pytest.mark.parametrize("args", [[], ["--code"], ["--file"], ["--language", "python"]])
def test_missing_code_refused(args):
    res, _ = refused(args, rc=2)
    assert res["message"]


def test_code_and_file_together_refused(tmp_path):
    f = tmp_path / "p.py"
    f.write_text("print(1)")
    res, _ = refused(["--code", "print(2)", "--file", str(f)], rc=2)
    assert "--code" in res["message"] and "--file" in res["message"]


def test_unreadable_inputs_refused(tmp_path):
    res, _ = refused(["--file", str(tmp_path / "nope.py")])
    assert "No such file" in res["message"]
    res, _ = refused(["--code", "print(1)", "--stdin", str(tmp_path / "nope.txt")])
    assert "stdin" in res["message"]


def test_unknown_option_and_stray_argument_refused():
    """A command line that does not parse exits 2 (usage), still with the
    whole result object under --json; a bad value stays a refusal (125)."""
    res, _ = refused(["--frobnicate", "--code", "print(1)"], rc=2)
    assert "--frobnicate" in res["message"]
    res, _ = refused(["--code", "print(1)", "stray"], rc=2)
    assert "stray" in res["message"]
    res, _ = refused(["--code"], rc=2)
    assert "needs a value" in res["message"], res
    res, _ = refused([], rc=2)
    assert "exactly one of --code and --file" in res["message"], res
    res, _ = refused(["--timeout", "lots", "--code", "print(1)"])
    assert "--timeout" in res["message"], res
    res, _ = refused(["--file", "/nonexistent/prog.py"])
    assert "cannot read the program" in res["message"], res


SUBCOMMANDS = ["run", "serve", "session", "plugins", "doctor"]


@pytest.mark.parametrize("cmd", SUBCOMMANDS + ["session exec", "session create"])
def test_help_on_every_subcommand(cmd):
    """--help (and -h) print the command's usage on stdout and exit 0,
    without starting anything."""
    for flag in ("--help", "-h"):
        r = run_cli(cmd.split() + [flag], timeout=30)
        assert r.rc == 0, r
        assert r.out.startswith(b"usage: llm-sandbox " + cmd.encode()), r
        assert r.err == b"", r


@pytest.mark.parametrize("args", [
    ["run", "--frobnicate"],
    ["serve", "--frobnicate"],
    ["session", "frobnicate"],
    ["session", "exec", "--frobnicate"],
    ["plugins", "--frobnicate"],
    ["doctor", "--frobnicate"],
    ["frobnicate"],
    ["--version", "--frobnicate"],
    ["--config"],
])
def test_usage_errors_exit_2(args):
    r = run_cli(args, timeout=30)
    assert r.rc == 2, r
    assert r.out == b"" and r.err, r


def test_version_json():
    """--version --json prints one JSON object holding what --version says."""
    text = run_cli(["--version"])
    assert text.rc == 0 and text.err == b"", text
    name, version = text.out.decode().split()
    r = run_cli(["--version", "--json"])
    assert r.rc == 0 and r.err == b"", r
    assert json.loads(r.out) == {"name": name, "version": version}, r


def test_exit_codes_documented_alike():
    """The exit codes the CLI uses (core/cli/cli.h) are the ones the
    top-level --help, run --help and the README state."""
    top = run_cli(["--help"]).out.decode()
    run = run_cli(["run", "--help"]).out.decode()
    with open(os.path.join(SBX_SOURCE_DIR, "README.md")) as f:
        readme = f.read()
    with open(os.path.join(SBX_SOURCE_DIR, "core", "cli", "cli.h")) as f:
        codes = dict(re.findall(r"#define (EXIT_\w+)\s+(\d+)", f.read()))
    assert codes == {"EXIT_USAGE": "2", "EXIT_TOOL": "125", "EXIT_TIMEOUT": "124",
                     "EXIT_CANCEL": "130"}, codes
    run_status = re.sub(r"\s+", " ", run.split("Exit status:", 1)[1])
    assert "124 on timeout" in run_status and "130 when cancelled" in run_status, run
    assert "125 when the run was refused" in run_status and "2 when the command line" \
        in run_status, run
    top_status = re.sub(r"\s+", " ", top.split("Exit status:", 1)[1])
    for phrase in ("2 when the command line does not parse", "125 when a run is refused",
                   "124 on timeout", "130 when cancelled"):
        assert phrase in top_status, (phrase, top)
    flat = re.sub(r"\s+", " ", readme)
    assert ("Exit status of `llm-sandbox run`: the program's exit code; 124 on timeout; "
            "125 when the run was refused or the tool failed; 130 when cancelled") in flat
    assert "2 when the command line does not parse" in flat
    assert "bad usage is 2" in flat


def test_text_mode_refusal_goes_to_stderr():
    r = run_cli(["run", "--timeout", "0", "--code", "print(1)"])
    assert r.rc == EXIT_TOOL and r.out == b"", r
    assert r.err.startswith(b"llm-sandbox: "), r


# Each kind of refusal must still carry the whole result object.
CONTRACT_CASES = {
    "unknown_language": ["--language", "cobol", "--code", "1"],
    "unknown_backend": ["--backend", "micromamba", "--code", "1"],
    "timeout_above_ceiling": ["--timeout", "301", "--code", "1"],
    "code_too_big": ["--code", "#" * (1024 * 1024 + 1)],
    "negative_timeout": ["--timeout", "-1", "--code", "1"],
    "garbage_memory": ["--memory", "lots", "--code", "1"],
    "missing_code": [],
    "unknown_option": ["--frobnicate", "--code", "1"],
    "unreadable_file": ["--file", "/nonexistent/prog.py"],
}


@pytest.mark.parametrize("case", sorted(CONTRACT_CASES))
def test_refusal_has_every_field(case):
    """--json prints the full result object for every outcome, bad arguments
    included: status, exit_code, limit, stdout, ... artifacts, warnings."""
    args = CONTRACT_CASES[case]
    if case == "code_too_big":
        r = run_cli(["run", "--json", "--code", "-"], input=b"#" * (1024 * 1024 + 1))
    else:
        r = run_cli(["run", "--json"] + args)
    res = r.json
    missing = [k for k in RESULT_FIELDS if k not in res]
    assert not missing, "refusal (%s) lacks %s: %r" % (case, missing, res)
    check_contract(r)
    assert res["status"] == "refused" and res["limit"] is None
    assert res["stdout"] == "" and res["stderr"] == "" and res["duration_ms"] >= 0


def test_configuration_ceiling_lowers_and_raises():
    """Operator ceilings (environment) bound requests; a request may narrow
    but never widen them."""
    env = {"LLM_SANDBOX_MAX_TIMEOUT": "60"}
    res, _ = refused(["--timeout", "61", "--code", "print(1)"], extra_env=env)
    assert "wall_time 61 s is above the ceiling of 60 s" in res["message"], res["message"]
    r = sbx("--timeout", "60", "--code", "print(1)", extra_env=env)
    assert r.json["status"] == "ok", r.json
    # a ceiling below the default is a configuration error, not a silent clamp
    r = run_cli(["run", "--json", "--code", "print(1)"],
                env=clean_env({"LLM_SANDBOX_MAX_TIMEOUT": "5"}))
    assert r.json["status"] == "error" and "LLM_SANDBOX_MAX_TIMEOUT" in r.json["message"], r
    assert r.rc == EXIT_TOOL, r
    r = sbx("--memory", "1G", "--code", "print(2)",
            extra_env={"LLM_SANDBOX_MAX_MEMORY": "2G"})
    assert r.json["status"] == "ok" and r.json["stdout"] == "2\n", r.json


def test_bad_configuration_is_a_tool_error():
    r = run_cli(["run", "--json", "--code", "print(1)"],
                env=clean_env({"SANDBOX_MEMORY": "lots"}))
    res = r.json
    check_contract(r)
    assert res["status"] in ("error", "refused"), res
    assert res["exit_code"] is None, res
    assert "SANDBOX_MEMORY" in res["message"], res
    assert r.rc == EXIT_TOOL, r


def test_privileged_is_refused():
    r = run_cli(["run", "--json", "--code", "print(1)"],
                env=clean_env({"SANDBOX_PRIVILEGED": "true"}))
    res = r.json
    assert res["status"] in ("error", "refused") and res["exit_code"] is None, res
    assert "SANDBOX_PRIVILEGED" in res["message"], res
    assert res["stdout"] == "", "nothing ran"
