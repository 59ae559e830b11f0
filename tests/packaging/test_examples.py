# SPDX-License-Identifier: MIT
"""examples/ as a stranger builds them: only against an installed prefix
(`cmake --install` of this build tree into a scratch directory), each both
with pkg-config (its Makefile) and with CMake (find_package), then loaded
through LLM_SANDBOX_PLUGIN_PATH by the installed binary and used to run
code. The compiler must have seen the prefix's headers, never the source
tree's, and each library must export exactly the entry symbol.

With SBX_EXAMPLES_PREFIX (e.g. /usr, where scripts/package-check.sh has
installed the .debs) the examples are built against that installed core
instead, and SBX_BUILD_DIR is not needed."""
import json
import os
import shutil
import subprocess
import tempfile

import pytest

SRC = os.environ["SBX_SOURCE_DIR"]
SYSTEM = os.environ.get("SBX_EXAMPLES_PREFIX")
EXAMPLES = {"backend-unshare": "unshare", "lang-perl": "perl", "lang-bash": "bash"}
WAYS = ["pkg-config", "cmake"]
CASES = [(ex, way) for ex in EXAMPLES for way in WAYS]


def run(argv, **kw):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=300, **kw)
    assert p.returncode == 0, "%s failed (%d):\n%s\n%s" % (argv, p.returncode, p.stdout, p.stderr)
    return p


@pytest.fixture(scope="module")
def scratch():
    # /var/tmp: the unshare example's boxes mount their own /tmp
    d = tempfile.mkdtemp(prefix="sbx-examples-", dir="/var/tmp")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def prefix(scratch):
    if SYSTEM:
        return {"dir": SYSTEM, "pkgconfig": None, "bin": os.path.join(SYSTEM, "bin", "llm-sandbox")}
    # under DESTDIR, so that a directory the build made absolute (/etc for
    # the prefix /usr) lands in the scratch directory too
    dest = os.path.join(scratch, "destdir")
    run(["cmake", "--install", os.environ["SBX_BUILD_DIR"], "--prefix", "/sbx"],
        env=dict(os.environ, DESTDIR=dest))
    p = os.path.join(dest, "sbx")
    pcs = [os.path.join(r, f) for r, _, fs in os.walk(p) for f in fs
           if f == "llm-sandbox-plugin.pc"]
    assert len(pcs) == 1, pcs
    return {"dir": p, "pkgconfig": os.path.dirname(pcs[0]), "bin": os.path.join(p, "bin", "llm-sandbox")}


def build(prefix, scratch, example, way):
    """Build one example one way, in a copy of its directory; returns the
    plugin directory and what the compiler was told."""
    src = os.path.join(scratch, "src-%s-%s" % (example, way))
    shutil.copytree(os.path.join(SRC, "examples", example), src)
    env = dict(os.environ)
    if way == "pkg-config":
        out = os.path.join(src, "plugins")
        if prefix["pkgconfig"]:
            env["PKG_CONFIG_PATH"] = prefix["pkgconfig"]
        p = run(["make", "-C", src, "OUT=" + out], env=env)
        commands = p.stdout
    else:
        bdir = os.path.join(src, "build")
        run(["cmake", "-S", src, "-B", bdir, "-DCMAKE_PREFIX_PATH=" + prefix["dir"],
             "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"], env=env)
        run(["cmake", "--build", bdir], env=env)
        out = os.path.join(bdir, "plugins")
        cc = os.path.join(bdir, "compile_commands.json")
        commands = open(cc).read() if os.path.exists(cc) else ""
    return out, commands


@pytest.fixture(scope="module")
def built(prefix, scratch):
    return {(ex, way): build(prefix, scratch, ex, way) for ex, way in CASES}


def sbx(prefix, plugdir, *args, extra_env=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_SANDBOX_", "SANDBOX_"))}
    env.pop("BACKEND", None)
    env["LLM_SANDBOX_PLUGIN_PATH"] = plugdir
    env.update(extra_env or {})
    return subprocess.run([prefix["bin"], *args], capture_output=True, text=True, timeout=120,
                          env=env)


def run_code(prefix, plugdir, code, *args, extra_env=None):
    p = sbx(prefix, plugdir, "run", "--json", "--code", code, *args, extra_env=extra_env)
    return json.loads(p.stdout)


@pytest.mark.parametrize("example,way", CASES)
def test_built_against_the_prefix_only(built, prefix, example, way):
    out, commands = built[(example, way)]
    name = EXAMPLES[example]
    assert os.path.exists(os.path.join(out, name + ".yaml"))
    if example == "lang-bash":
        assert not os.path.exists(os.path.join(out, name + ".so"))
        return
    assert commands, "no compile command recorded"
    if not SYSTEM:  # (CMake leaves out -I/usr/include, a system directory)
        assert prefix["dir"] in commands, commands
    assert os.path.join(SRC, "core", "include") not in commands, commands
    assert "-fvisibility=hidden" in commands, commands
    nm = run(["nm", "-D", "--defined-only", os.path.join(out, name + ".so")]).stdout.split()
    assert [s for s in nm if not s.startswith("0") and s not in ("T", "t")] == \
        ["sbx_plugin_entry_v1"], nm


@pytest.mark.parametrize("example,way", CASES)
def test_listed_by_plugins(built, prefix, example, way):
    out, _ = built[(example, way)]
    p = sbx(prefix, out, "plugins", "--json")
    assert p.returncode == 0, p
    entry = [e for e in json.loads(p.stdout) if e["name"] == EXAMPLES[example]]
    assert len(entry) == 1, p.stdout
    assert entry[0]["status"] == "ok", entry
    assert os.path.dirname(entry[0]["manifest"]) == out, entry


@pytest.mark.parametrize("way", WAYS)
def test_bash_runs(built, prefix, way):
    res = run_code(prefix, built[("lang-bash", way)][0], "echo $((6*7))", "--language", "bash")
    assert res["status"] == "ok" and res["stdout"] == "42\n", res


@pytest.mark.parametrize("way", WAYS)
def test_perl_hook_runs(built, prefix, way):
    plug = built[("lang-perl", way)][0]
    taint = '#!/usr/bin/perl -wT\nprint "taint=${^TAINT}\\n"; print 6*7, "\\n";\n'
    res = run_code(prefix, plug, taint, "--language", "perl")
    assert res["status"] == "ok" and res["stdout"] == "taint=1\n42\n", res
    res = run_code(prefix, plug, 'print "taint=${^TAINT}\\n";', "--language", "perl")
    assert res["status"] == "ok" and res["stdout"] == "taint=0\n", res


PROBE = r"""
import os
st = dict(l.split(":", 1) for l in open("/proc/self/status"))
print(6 * 7, os.getuid(), os.getpid() > 1, st["NoNewPrivs"].strip(), st["Seccomp"].strip(),
      st["CapEff"].strip())
try:
    open("/usr/x", "w")
except OSError as e:
    print(e.errno)
"""


@pytest.mark.parametrize("way", WAYS)
def test_unshare_backend_runs_the_default_policy(built, prefix, way):
    plug = built[("backend-unshare", way)][0]
    res = run_code(prefix, plug, PROBE, "--backend", "unshare")
    # 42, uid 1000 in the box, no_new_privs, the core's filter, no capabilities, EROFS
    assert res["status"] == "ok", res
    assert res["stdout"] == "42 1000 True 1 2 0000000000000000\n30\n", res


@pytest.mark.parametrize("way", WAYS)
def test_unshare_backend_refuses_what_it_cannot_enforce(built, prefix, way):
    plug = built[("backend-unshare", way)][0]
    res = run_code(prefix, plug, "print(1)", "--backend", "unshare", "--network", "on",
                   extra_env={"LLM_SANDBOX_NETWORK": "on"})
    assert res["status"] == "refused", res
    assert "cannot enforce network_on" in res["message"], res
