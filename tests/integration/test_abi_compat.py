# SPDX-License-Identifier: MIT
"""Plugins built against the frozen ABI 1.0 and 1.3 headers (tests/abi/)
load and run in the current core unchanged, and a box whose backend applies
no seccomp filter still gets ours: the agent installs it before exec (ABI
1.4). Checked from inside the box, against a control run of the same probe
in the same kind of box without the agent's filter."""
import json
import os
import subprocess

import pytest

from conftest import FILTER_PROBE, SBX_BUILD_DIR, code, plugin_entry, plugins_json, sbx

FIXTURES = os.path.join(SBX_BUILD_DIR, "tests", "abi", "plugins")
# every frozen header: "1.0" builds compat10 (backend) and compat10lang
ABIS = ["1.0", "1.3"]


def env(abi):
    return {"LLM_SANDBOX_PLUGIN_PATH": FIXTURES, "BACKEND": "compat" + abi.replace(".", "")}


@pytest.mark.parametrize("abi", ABIS)
def test_old_plugins_load_with_their_abi(abi):
    name = "compat" + abi.replace(".", "")
    plugins = plugins_json(env(abi))
    backend = plugin_entry(plugins, name, FIXTURES)
    lang = plugin_entry(plugins, name + "lang", FIXTURES)
    assert backend["status"] == "ok" and lang["status"] == "ok", (backend, lang)
    assert backend["version"] == lang["version"] == abi + ".0", (backend, lang)
    seccomp = backend["controls"]["seccomp"]
    assert seccomp["level"] == "full", seccomp
    assert "applied by the sandbox agent" in seccomp["note"], seccomp


@pytest.mark.parametrize("abi", ABIS)
def test_old_language_hook_runs_on_old_backend(abi):
    lang = "compat" + abi.replace(".", "") + "lang"
    res = code("import sys; print(sys.argv[1])", "--language", lang, extra_env=env(abi))
    assert res["status"] == "ok", res
    assert res["stdout"] == "hello-from-%s\n" % abi, res


@pytest.mark.parametrize("abi", ABIS)
def test_agent_applies_our_filter_where_the_backend_does_not(abi):
    res = code(FILTER_PROBE, extra_env=env(abi))
    assert res["status"] == "ok", res
    assert res["stdout"] == "unshare -1 EPERM\nptrace -1 EPERM\nnnp 1 seccomp 2\n", res


def test_control_same_box_without_the_filter_allows_them():
    """The same probe in the same bwrap box (namespaces as compat10 and
    compat13 make them), with no agent in between: the calls succeed, so the
    denial above is the agent's filter and nothing else."""
    argv = ["/usr/bin/bwrap", "--unshare-user", "--unshare-pid", "--unshare-net",
            "--die-with-parent", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin",
            "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--proc", "/proc",
            "--dev", "/dev", "/usr/bin/python3", "-c", FILTER_PROBE]
    p = subprocess.run(argv, capture_output=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p
    out = p.stdout.decode()
    assert out.startswith("unshare 0 0\nptrace 0 0\nnnp 1 seccomp 0\n"), out
