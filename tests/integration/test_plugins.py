# SPDX-License-Identifier: MIT
"""Plugins found on LLM_SANDBOX_PLUGIN_PATH (issue 2, sections 2-4 and "Done
when"): broken manifests and libraries are reported by `plugins` and
`doctor` and never stop `run`; a plugin named like an installed one is
reported as shadowed and ignored."""
import json
import os
import re

import pytest

import containers
from conftest import (CONTAINER, EXIT_TOOL, ROOT, cgroup_facts, cgroups_enforced, plugin_entry,
                      plugins_json, run_cli, sbx)

LOC = re.compile(r":(\d+):(\d+): ")


def write(d, name, text):
    p = d / name
    p.write_text(text)
    return p


@pytest.fixture
def extra(tmp_path):
    d = tmp_path / "plugins"
    d.mkdir()
    return d


def env_for(d, path=None):
    """Plugins from d (or a search path), and on a container backend the
    test image for the data-only languages below, which name none."""
    env = {"LLM_SANDBOX_PLUGIN_PATH": path or str(d)}
    if CONTAINER:
        env["SANDBOX_IMAGE_IMPOSTOR"] = containers.IMAGE
    return env


BAD_YAML = "name: badyaml\nkind: language\n  version: [1\n"
UNKNOWN_KEY = ("name: unknownkey\nkind: language\nversion: 0.1.0\nabi: \"1.0\"\n"
               "description: has a key nobody knows\nbogus_key: 1\n"
               "language:\n  source_file: main.py\n  run: [python3, \"{source}\"]\n")
WRONG_TYPE = ("name: wrongtype\nkind: language\nversion: [0, 1]\nabi: \"1.0\"\n"
              "description: x\nlanguage:\n  source_file: main.py\n  run: [python3]\n")
GARBAGE_SO = ("name: garbage\nkind: backend\nversion: 0.1.0\nabi: \"1.0\"\n"
              "library: garbage.so\ndescription: a library that is not an ELF file\n")
MISSING_SO = ("name: missinglib\nkind: backend\nversion: 0.1.0\nabi: \"1.0\"\n"
              "library: missinglib.so\ndescription: names a library that is not there\n")
IMPOSTOR = ("name: {name}\nkind: language\nversion: 9.9.9\nabi: \"1.0\"\n"
            "description: a data-only language that prints IMPOSTOR\n"
            "language:\n  source_file: main.py\n  run: [python3, -c, \"print('IMPOSTOR')\"]\n")


def populate_broken(d):
    write(d, "badyaml.yaml", BAD_YAML)
    write(d, "unknownkey.yaml", UNKNOWN_KEY)
    write(d, "wrongtype.yaml", WRONG_TYPE)
    write(d, "garbage.yaml", GARBAGE_SO)
    (d / "garbage.so").write_bytes(b"\x7fNOT an ELF file, just bytes\n" * 40)
    write(d, "missinglib.yaml", MISSING_SO)


def test_installed_plugins_report():
    data = plugins_json()
    bwrap = plugin_entry(data, "bwrap")
    assert bwrap["kind"] == "backend" and bwrap["status"] == "ok", bwrap
    assert "bubblewrap" in bwrap["aliases"]
    assert bwrap["probe"] == "ok" and bwrap["probe_error"] is None, bwrap
    ctl = bwrap["controls"]
    for c in ("wall_time", "output", "file_size", "workspace", "network_off", "seccomp",
              "no_new_privs", "environment", "read_only_system", "unprivileged"):
        assert ctl[c]["level"] == "full", (c, ctl[c])
    if ROOT:
        assert "1879048192" in ctl["unprivileged"]["note"], ctl["unprivileged"]
    if cgroups_enforced():
        version = "cgroup v%d " % cgroup_facts()["version"]
        for c in ("memory", "cpu", "pids"):
            assert ctl[c]["level"] == "full" and version in ctl[c]["note"], (c, ctl[c])
    else:
        assert ctl["memory"]["level"] == "fallback" and "RLIMIT_AS" in ctl["memory"]["note"]
        assert ctl["pids"]["level"] == "fallback" and "RLIMIT_NPROC" in ctl["pids"]["note"]
        assert ctl["cpu"]["level"] == "none", ctl["cpu"]
    for c in ("network_registries", "network_allowlist"):  # the installs' proxy
        assert ctl[c]["level"] == "full" and "proxy" in ctl[c]["note"], (c, ctl[c])
    assert ctl["host_mounts"]["level"] == "full", ctl["host_mounts"]
    py = plugin_entry(data, "python")
    assert py["kind"] == "language" and py["status"] == "ok" and py["error"] is None, py
    assert py["source_file"] == "main.py"


def test_plugins_text_output():
    r = run_cli(["plugins"])
    assert r.rc == 0, r
    lines = r.out.decode().splitlines()
    assert lines[0].split() == ["NAME", "KIND", "VERSION", "STATUS", "MANIFEST"], lines[0]
    assert any(re.match(r"bwrap\s+backend\s+\S+\s+ok\s", l) for l in lines), lines
    assert any(re.match(r"python\s+language\s+\S+\s+ok\s", l) for l in lines), lines


def test_doctor_clean():
    r = run_cli(["doctor", "--json"])
    rep = json.loads(r.out)
    assert rep["ok"] is True and r.rc == 0, rep
    checks = {c["check"]: c for c in rep["checks"]}
    assert checks["plugin:bwrap"]["status"] == "ok", checks
    assert checks["seccomp"]["status"] == "ok"
    cg = rep["cgroup"]
    if cgroups_enforced():
        assert checks["cgroups"]["status"] == "ok", checks["cgroups"]
        assert cg["enforced"] and cg["version"] in (1, 2), cg
        assert cg["controllers"] == ["memory", "pids", "cpu"], cg
        assert os.path.basename(cg["parent"]) == "llm-sandbox", cg
        if cg["version"] == 2:  # a delegated subtree: ours, or a scope systemd made for us
            assert cg["how"] in ("delegated", "scope", "unmanaged"), cg
    else:
        assert checks["cgroups"]["status"] == "warn" and checks["cgroups"]["fix"], \
            checks["cgroups"]
        assert "run llm-sandbox as root" not in checks["cgroups"]["fix"] or not ROOT, checks
        assert not cg["enforced"] and cg["controllers"] == [], cg
    r = run_cli(["doctor"])
    assert r.rc == 0 and b"plugin:bwrap" in r.out, r


def test_doctor_reports_the_bubblewrap_version_floor():
    """GHSA-pxhw-h44j-8pfx: bubblewrap before 0.12.0 follows a symlink in
    a bind target's parent while setting up. doctor names the installed
    version, says whether the package's changelog carries the fix (Debian
    backports without a version bump), and why our binds are not exposed."""
    import gzip
    import subprocess
    bwrap = "/usr/bin/bwrap"
    if not os.access(bwrap, os.X_OK):
        pytest.skip("no /usr/bin/bwrap")
    out = subprocess.run([bwrap, "--version"], capture_output=True, text=True).stdout
    version = tuple(int(x) for x in re.search(r"bubblewrap (\d+)\.(\d+)\.(\d+)", out).groups())
    changelog = "/usr/share/doc/bubblewrap/changelog.Debian.gz"
    try:
        with gzip.open(changelog, "rt", errors="replace") as f:
            backported = "GHSA-pxhw-h44j-8pfx" in f.read()
    except OSError:
        backported = False
    rep = json.loads(run_cli(["doctor", "--json"]).out)
    check = {c["check"]: c for c in rep["checks"]}["bwrap_version"]
    assert "bubblewrap %d.%d.%d" % version in check["detail"], check
    if version >= (0, 12, 0) or backported:
        assert check["status"] == "ok" and check["fix"] is None, check
    else:
        assert check["status"] == "warn", check
        assert "GHSA-pxhw-h44j-8pfx" in check["detail"] and "0.12.0" in check["fix"], check
    if version < (0, 12, 0):
        assert "none under a sandbox-writable path" in check["detail"], check


@pytest.mark.parametrize("var,value,listed", [
    ("BACKEND", "nope", "bwrap"),
    ("LLM_SANDBOX_DEFAULT_LANGUAGE", "nope", "python"),
])
def test_doctor_fails_as_the_server_refuses(var, value, listed):
    """doctor makes the server's start-up check: a backend or default
    language that does not exist fails it with the same message the server
    refuses to start with (which lists what is installed), and a fix that
    names the variable."""
    env = {var: value}
    r = run_cli(["doctor", "--json"], extra_env=env, mark=False)
    rep = json.loads(r.out)
    assert r.rc == 1 and rep["ok"] is False, rep
    c = {c["check"]: c for c in rep["checks"]}["defaults"]
    assert c["status"] == "fail" and "'nope'" in c["detail"] and listed in c["detail"], c
    assert var in c["fix"], c
    r = run_cli(["doctor"], extra_env=env, mark=False)
    assert r.rc == 1 and b"[fail] defaults" in r.out and var.encode() in r.out, r
    s = run_cli(["serve"], extra_env=env, mark=False, timeout=60)
    assert s.rc == 125 and c["detail"].encode() in s.err, (s, c)


def test_doctor_defaults_pass():
    rep = json.loads(run_cli(["doctor", "--json"], mark=False).out)
    c = {c["check"]: c for c in rep["checks"]}["defaults"]
    assert c["status"] == "ok" and "the server can start" in c["detail"], c


def test_backend_whose_probe_fails_is_not_ok():
    """A backend that loads but cannot run here (its daemon does not
    answer) is listed as unusable, with the probe's message; never ok."""
    env = {"DOCKER_HOST": "unix:///nonexistent/cliedge-no-docker.sock"}
    data = plugins_json(env)
    if not any(p["name"] == "docker" for p in data):
        pytest.skip("the docker backend is not built")
    d = plugin_entry(data, "docker")
    assert d["status"] == "unusable" and d["probe"] == "failed", d
    assert "cliedge-no-docker.sock" in d["probe_error"], d
    assert plugin_entry(data, "bwrap")["status"] == "ok"
    r = run_cli(["plugins"], extra_env=env, mark=False)
    assert any(re.match(r"docker\s+backend\s+\S+\s+unusable\s", l)
               for l in r.out.decode().splitlines()), r


@pytest.mark.parametrize("kind", ["absent", "dead", "not-a-socket"])
def test_a_docker_socket_that_does_not_answer_is_named(tmp_path, kind):
    """Not curl's "Failed to connect to localhost port 80": which socket,
    what is wrong with it, and how to start the daemon."""
    import socket as so
    path = str(tmp_path / "mcpedge-docker.sock")
    if kind == "dead":  # a socket file nobody listens on
        s = so.socket(so.AF_UNIX)
        s.bind(path)
        s.close()
    elif kind == "not-a-socket":
        open(path, "w").close()
    data = plugins_json({"DOCKER_HOST": "unix://" + path})
    if not any(p["name"] == "docker" for p in data):
        pytest.skip("the docker backend is not built")
    why = plugin_entry(data, "docker")["probe_error"]
    assert "port 80" not in why and "localhost" not in why, why
    assert "'%s'" % path in why, why
    assert {"absent": "does not exist", "dead": "nothing listens",
            "not-a-socket": "is not a socket"}[kind] in why, why
    assert "systemctl start docker" in why and "DOCKER_HOST" in why, why


def test_serve_http_on_a_port_in_use_says_so():
    import socket as so
    s = so.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    port = s.getsockname()[1]
    try:
        r = run_cli(["serve", "--http", "127.0.0.1:%d" % port], timeout=30, mark=False)
    finally:
        s.close()
    err = r.err.decode()
    if "not available in this build" in err:
        pytest.skip(err.strip())
    assert r.rc == EXIT_TOOL, r
    assert "127.0.0.1:%d" % port in err and "the port is in use" in err, err
    assert "port 0" not in err, err  # libmicrohttpd's own bind message


def test_broken_plugins_reported_by_plugins(extra):
    populate_broken(extra)
    data = plugins_json(env_for(extra))
    d = str(extra)
    bad = plugin_entry(data, "badyaml", d)
    assert bad["status"] == "broken", bad
    assert bad["error"].startswith(d + "/badyaml.yaml:3:"), bad["error"]
    assert LOC.search(bad["error"]), bad["error"]
    unk = plugin_entry(data, "unknownkey", d)
    assert unk["status"] == "broken", unk
    assert unk["error"].startswith(d + "/unknownkey.yaml:6:1: "), unk["error"]
    assert "bogus_key" in unk["error"], unk["error"]
    wt = plugin_entry(data, "wrongtype", d)
    assert wt["status"] == "broken" and wt["error"].startswith(d + "/wrongtype.yaml:3:"), wt
    garbage = plugin_entry(data, "garbage", d)
    assert garbage["status"] == "broken", garbage
    assert d + "/garbage.so" in garbage["error"], garbage["error"]
    missing = plugin_entry(data, "missinglib", d)
    assert missing["status"] == "broken", missing
    assert d + "/missinglib.so" in missing["error"], missing["error"]
    assert "No such file" in missing["error"], missing["error"]
    # the installed plugins are untouched
    assert plugin_entry(data, "bwrap")["status"] == "ok"
    assert plugin_entry(data, "python")["status"] == "ok"


def test_garbage_library_error_says_what_is_wrong(extra):
    """A library file that exists but is not an ELF object must not be
    reported as missing."""
    populate_broken(extra)
    garbage = plugin_entry(plugins_json(env_for(extra)), "garbage", str(extra))
    assert "not found" not in garbage["error"].lower(), (
        "garbage.so exists; the report says: %s" % garbage["error"])


def test_broken_plugins_reported_by_doctor(extra):
    populate_broken(extra)
    r = run_cli(["doctor", "--json"], extra_env=env_for(extra))
    rep = json.loads(r.out)
    assert r.rc != 0, "doctor must exit non-zero when a plugin is broken"
    assert rep["ok"] is False
    checks = {c["check"]: c for c in rep["checks"]}
    for name in ("badyaml", "unknownkey", "wrongtype", "garbage", "missinglib"):
        c = checks["plugin:" + name]
        assert c["status"] == "fail" and c["fix"], c
    assert LOC.search(checks["plugin:badyaml"]["detail"])
    assert "garbage.so" in checks["plugin:garbage"]["detail"]
    assert checks["plugin:bwrap"]["status"] == "ok"
    # text form too
    r = run_cli(["doctor"], extra_env=env_for(extra))
    assert r.rc != 0
    text = r.out.decode()
    assert re.search(r"\[fail\] plugin:badyaml\s+.*badyaml\.yaml:3:\d+", text), text
    assert re.search(r"\[fail\] plugin:garbage\s+.*garbage\.so", text), text
    assert re.search(r"\[fail\] plugin:unknownkey\s+.*unknownkey\.yaml:6:1", text), text


def test_run_still_works_with_broken_plugins(extra):
    populate_broken(extra)
    r = sbx("--code", "print(6*7)", extra_env=env_for(extra))
    assert r.json["status"] == "ok" and r.json["stdout"] == "42\n", r.json
    r = run_cli(["run", "--code", "print(6*7)"], extra_env=env_for(extra))
    assert r.rc == 0 and r.out == b"42\n", r
    # a broken backend chosen explicitly is refused with its error
    r = sbx("--backend", "garbage", "--code", "print(1)", extra_env=env_for(extra))
    assert r.json["status"] == "refused", r.json
    assert "garbage" in r.json["message"] and "bwrap" in r.json["message"], r.json


def test_extra_directory_positive_control(extra):
    """A valid data-only language in the extra directory loads and runs: the
    directory is really searched (so 'shadowed' below means shadowed)."""
    write(extra, "impostor.yaml", IMPOSTOR.format(name="impostor"))
    entry = plugin_entry(plugins_json(env_for(extra)), "impostor", str(extra))
    assert entry["status"] == "ok", entry
    r = sbx("--language", "impostor", "--code", "print(1)", extra_env=env_for(extra))
    assert r.json["status"] == "ok" and r.json["stdout"] == "IMPOSTOR\n", r.json["message"]


def test_shadowing_plugin_is_reported_and_ignored(extra):
    write(extra, "python.yaml", IMPOSTOR.format(name="python"))
    data = plugins_json(env_for(extra))
    shadow = plugin_entry(data, "python", str(extra))
    assert shadow["status"] == "shadowed", shadow
    assert "python" in shadow["error"] and "already" in shadow["error"], shadow
    installed = [p for p in data if p["name"] == "python" and p["status"] == "ok"]
    assert len(installed) == 1 and installed[0]["version"] != "9.9.9", installed
    r = sbx("--code", "print(6*7)", extra_env=env_for(extra))
    assert r.json["status"] == "ok" and r.json["stdout"] == "42\n", r.json
    r = run_cli(["doctor", "--json"], extra_env=env_for(extra))
    rep = json.loads(r.out)
    c = {x["check"]: x for x in rep["checks"]}["plugin:python"]
    assert c["status"] == "warn" and "already" in c["detail"], c
    assert r.rc == 0, "a shadowed plugin is a warning, not a failure"


def test_doctor_looks_for_a_languages_binaries_along_its_path(extra):
    """A required binary named without a directory is looked for along the
    language's own PATH (env PATH in its manifest): found, doctor names
    where; missing, doctor fails the check (it used to say "found")."""
    manifest = ("name: {name}\nkind: language\nversion: 0.1.0\nabi: \"1.0\"\n"
                "description: needs {tool}\nrequires:\n  binaries:\n    - name: {tool}\n"
                "language:\n  source_file: main.x\n  run: [{tool}, \"{{source}}\"]\n"
                "  env:\n    PATH: /nonexistent:/usr/bin:/bin\n")
    write(extra, "hastool.yaml", manifest.format(name="hastool", tool="env"))
    write(extra, "notool.yaml", manifest.format(name="notool", tool="sbx-no-such-tool"))
    r = run_cli(["doctor", "--json"], extra_env=env_for(extra))
    checks = {x["check"]: x for x in json.loads(r.out)["checks"]}
    ok, missing = checks["runtime:hastool"], checks["runtime:notool"]
    assert ok["status"] == "ok" and ok["detail"] in ("/usr/bin/env found", "/bin/env found"), ok
    assert missing["status"] == "fail", missing
    assert "sbx-no-such-tool: not found along the language's PATH" == missing["detail"], missing
    assert r.rc != 0, "a missing toolchain fails doctor"


def test_plugin_path_with_several_and_missing_directories(extra, tmp_path):
    write(extra, "impostor.yaml", IMPOSTOR.format(name="impostor"))
    path = "%s:%s:" % (tmp_path / "does-not-exist", extra)
    r = sbx("--language", "impostor", "--code", "print(1)", extra_env=env_for(None, path))
    assert r.json["stdout"] == "IMPOSTOR\n", r.json


def test_manifest_must_be_named_after_plugin(extra):
    write(extra, "wrongname.yaml", IMPOSTOR.format(name="othername"))
    entry = plugin_entry(plugins_json(env_for(extra)), "wrongname", str(extra))
    assert entry["status"] == "broken" and "othername" in entry["error"], entry


def test_allowed_languages_disable_the_rest(extra, tmp_path):
    """LLM_SANDBOX_LANGUAGES offers only the languages it names: the others
    are reported as disabled and refused by name; the named ones still run."""
    write(extra, "impostor.yaml", IMPOSTOR.format(name="impostor"))
    env = dict(env_for(extra), LLM_SANDBOX_LANGUAGES="python")
    entry = plugin_entry(plugins_json(env), "impostor", str(extra))
    assert entry["status"] == "disabled" and "LLM_SANDBOX_LANGUAGES" in entry["error"], entry
    r = sbx("--language", "impostor", "--code", "print(1)", extra_env=env)
    assert r.json["status"] == "refused", r.json
    assert "not offered" in r.json["message"] and "python" in r.json["message"], r.json
    r = sbx("--code", "print(6*7)", extra_env=env)
    assert r.json["status"] == "ok" and r.json["stdout"] == "42\n", r.json
    # the config file takes a sequence; the positive control offers impostor
    cfg = tmp_path / "langs.yaml"
    cfg.write_text("LLM_SANDBOX_LANGUAGES:\n  - impostor\n")
    r = sbx("--config", str(cfg), "--language", "impostor", "--code", "print(1)",
            extra_env=env_for(extra))
    assert r.json["status"] == "ok" and r.json["stdout"] == "IMPOSTOR\n", r.json["message"]
    r = sbx("--config", str(cfg), "--code", "print(1)", extra_env=env_for(extra))
    assert r.json["status"] == "refused" and "python" in r.json["message"], r.json


@pytest.mark.parametrize("value,phrase", [
    ("python,nosuch", "'nosuch', which is not an installed, usable language"),
    ("py thon", "'py thon' is not a language name"),
])
def test_allowed_languages_bad_name_stops_start_up(value, phrase):
    r = run_cli(["run", "--json", "--code", "print(1)"],
                extra_env={"LLM_SANDBOX_LANGUAGES": value})
    res = json.loads(r.out)
    assert res["status"] in ("error", "refused") and phrase in res["message"], res
    assert res["stdout"] == "" and r.rc != 0, (res, r.rc)


NSJAIL_TOO_OLD = """#!/bin/sh
# an nsjail from before 3.4: no --execute_fd, no --symlink
echo ' Usage: nsjail [options] -- path_to_command [args]'
echo '  --config|-C VALUE'
echo '  --seccomp_policy|-P VALUE'
echo '  --rlimit_msgqueue VALUE'
exit 0
"""


def test_nsjail_missing_or_too_old_is_refused_clearly(tmp_path):
    """The nsjail probe names what is missing: no binary at the configured
    path, or one without the options the translation needs (nsjail has no
    version option, so the probe reads --help)."""
    missing = str(tmp_path / "no-nsjail")
    r = sbx("--backend", "nsjail", "--code", "print(1)",
            extra_env={"LLM_SANDBOX_NSJAIL_PATH": missing})
    assert r.json["status"] == "refused", r.json
    assert "nsjail not found at %s" % missing in r.json["message"], r.json
    old = tmp_path / "nsjail"
    old.write_text(NSJAIL_TOO_OLD)
    old.chmod(0o755)
    r = sbx("--backend", "nsjail", "--code", "print(1)",
            extra_env={"LLM_SANDBOX_NSJAIL_PATH": str(old)})
    assert r.json["status"] == "refused", r.json
    assert "lacks --execute_fd" in r.json["message"], r.json
    assert "nsjail 3.4 or newer" in r.json["message"], r.json
    # and bwrap is unaffected
    r = sbx("--backend", "bwrap", "--code", "print(1)",
            extra_env={"LLM_SANDBOX_NSJAIL_PATH": str(old)})
    assert r.json["status"] == "ok", r.json
