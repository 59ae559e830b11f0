# SPDX-License-Identifier: MIT
"""Libraries installed at run time, for real: pip from PyPI, npm from the
npm registry, Go modules through the module proxy, Maven artifacts from
Maven Central (R packages and gems from repositories made in the test, as
CRAN and rubygems.org are not reachable here), each through the core's
filtering proxy into the content-addressed dependency cache; then the same
request again finds the set and installs nothing.

Every test gets its own cache (LLM_SANDBOX_CACHE_DIR in a temporary
directory), so the first run of a list installs and the second finds it.
Canaries on this machine's loopback show the install sandbox reaches
nothing but the allowed registries.
"""
import glob
import os
import pty
import re
import shutil
import stat
import subprocess
import tempfile
import threading

import pytest

from conftest import (BACKEND, CONTAINER, ROOT, SBX_BIN, WEAK_LIMIT, Result, backend_controls,
                      clean_env, run_cli, sbx)
from test_sessions import Client

pytestmark = pytest.mark.contract

GO_TIMEOUT = "120"


def installs_supported():
    """Installs need the filtering proxy's network mode and the core's
    mounts (containers: volumes, and the proxy only on a local daemon); a
    backend without them refuses."""
    ctl = backend_controls()
    return all(ctl[c]["level"] == "full" for c in ("network_registries", "host_mounts"))


@pytest.fixture
def cache():
    """A fresh cache in /var/tmp: as root, sandboxes run as another uid that
    must reach it (pytest's own temporary directories are private)."""
    if not installs_supported():
        pytest.skip("backend %s cannot install libraries (test_backend_without_installs)"
                    % BACKEND)
    d = tempfile.mkdtemp(prefix="llm-sandbox-test-cache-", dir="/var/tmp")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)
    assert not os.path.exists(d)


def run(cache_dir, lang, src, libs, *args, env=None):
    extra = {"LLM_SANDBOX_CACHE_DIR": cache_dir}
    extra.update(env or {})
    r = sbx("--language", lang, "--code", src, "--libraries", ",".join(libs), *args,
            extra_env=extra)
    return Result(r.json)


def user_cache_dir():
    """The cache a server of this user keeps without LLM_SANDBOX_CACHE_DIR
    (core/src/policy/settings.c)."""
    if os.environ.get("LLM_SANDBOX_CACHE_DIR"):
        return os.environ["LLM_SANDBOX_CACHE_DIR"]
    if os.geteuid() == 0:
        return "/var/cache/llm-sandbox"
    if os.environ.get("XDG_CACHE_HOME", "").startswith("/"):
        return os.path.join(os.environ["XDG_CACHE_HOME"], "llm-sandbox")
    if os.environ.get("HOME", "").startswith("/"):
        return os.path.join(os.environ["HOME"], ".cache", "llm-sandbox")
    return "/var/tmp/llm-sandbox-cache-%d" % os.geteuid()


def seed_warm_sets(cache_dir, lang):
    """With SBX_TEST_SEED_WARM=1, a fresh cache starts with the warm-up sets
    of LANG that this user's cache holds (hard links: a set is read-only to
    its runs), so that a test pays for the install it is about and not
    again for compiling Go's standard library (some 45 s a suite), when
    one of them is the set its runs need. scripts/test.sh sets it for every
    suite that runs this test but the unprivileged lane's bwrap one, which
    builds the set in its empty cache as before.
    Returns the names of the sets linked."""
    if os.environ.get("SBX_TEST_SEED_WARM") != "1":
        return []
    found = [d for d in glob.glob(os.path.join(user_cache_dir(), "deps", "warm-%s-*" % lang))
             if os.path.isfile(os.path.join(d, ".sbx-set"))]
    deps = os.path.join(cache_dir, "deps")
    for d in found:
        os.makedirs(deps, mode=0o755, exist_ok=True)
        # a copy where the two caches are on different file systems
        if subprocess.run(["cp", "-al", "--", d, deps], stderr=subprocess.DEVNULL).returncode:
            shutil.rmtree(os.path.join(deps, os.path.basename(d)), ignore_errors=True)
            subprocess.run(["cp", "-a", "--", d, deps], check=True)
    return sorted(os.path.basename(d) for d in found)


def sets(cache_dir):
    d = os.path.join(cache_dir, "deps")
    return sorted(n for n in os.listdir(d) if not n.startswith(".") and not n.endswith(".lock"))


def assert_installed(res, out):
    assert res["status"] == "ok", res
    assert res["stdout"] == out, res
    assert res["install"]["cached"] is False, res


def assert_cached(res, out):
    assert res["status"] == "ok", res
    assert res["stdout"] == out, res
    assert res["install"] == {"cached": True, "duration_ms": res["install"]["duration_ms"],
                              "log": "", "log_truncated": False}, res


def test_python_pure_and_cached(cache):
    src = 'import pyfiglet, sys\nprint(pyfiglet.__file__)\nprint(len(pyfiglet.figlet_format("hi")) > 0)\n'
    out = "/deps/python/pyfiglet/__init__.py\nTrue\n"
    first = run(cache, "python", src, ["pyfiglet"])
    assert_installed(first, out)
    assert "Successfully installed pyfiglet" in first["install"]["log"], first
    second = run(cache, "python", src, ["pyfiglet"])
    assert_cached(second, out)
    assert len(sets(cache)) == 1


def test_python_compiled_wheel(cache):
    src = "import numpy\nprint(int(numpy.arange(10).sum()))\n"
    assert_installed(run(cache, "python", src, ["numpy"]), "45\n")
    assert_cached(run(cache, "python", src, ["numpy"]), "45\n")


def test_same_set_whatever_the_order(cache):
    """The key is the sorted, de-duplicated list."""
    src = "import pyfiglet, six\nprint('ok')\n"
    assert_installed(run(cache, "python", src, ["six", "pyfiglet"]), "ok\n")
    assert_cached(run(cache, "python", src, ["pyfiglet", "six", "six"]), "ok\n")


def test_javascript_commonjs_and_module(cache):
    cjs = 'const n = require("is-number"); const _ = require("lodash");\n' \
          'console.log(n(5), _.chunk([1, 2, 3, 4], 2).length);\n'
    esm = 'import n from "is-number"; import _ from "lodash";\n' \
          'console.log(n(5), _.chunk([1, 2, 3, 4], 2).length);\n'
    res = run(cache, "javascript", cjs, ["is-number", "lodash"])
    assert_installed(res, "true 2\n")
    # the set's node_modules (a mount in the workspace) holds no artifacts
    assert res["artifacts"] == [], res["artifacts"][:3]
    assert_cached(run(cache, "javascript", esm, ["lodash", "is-number"]), "true 2\n")


def test_go_module(cache):
    seeded = seed_warm_sets(cache, "go")
    src = ('package main\n\nimport (\n\t"fmt"\n\n\t"github.com/google/uuid"\n)\n\n'
           'func main() {\n\tfmt.Println(uuid.NewSHA1(uuid.NameSpaceDNS, []byte("x")).Version())\n}\n')
    first = run(cache, "go", src, ["github.com/google/uuid@v1.6.0"], "--timeout", GO_TIMEOUT)
    assert_installed(first, "VERSION_5\n")
    assert "github.com/google/uuid v1.6.0" in first["install"]["log"], first
    # the module's set, the program's build, and the warm-up set built here
    # (none when a seeded set was the one it needs: the user's cache has it
    # once a Go run with modules ran there, as conftest.py's warm-up makes
    # one with SBX_TEST_SEED_WARM=1)
    made = [n for n in sets(cache) if n not in seeded]
    warm = [n for n in made if n.startswith("warm-go-")]
    assert [n.split("-")[0] for n in made if n not in warm] == ["build", "go"], made
    assert len(warm) == 1 or (seeded and not warm), (made, seeded)
    assert_cached(run(cache, "go", src, ["github.com/google/uuid@v1.6.0"], "--timeout",
                      GO_TIMEOUT), "VERSION_5\n")


def test_java_maven_with_transitive_dependencies(cache):
    """commons-text brings commons-lang3 along; both are on the class path."""
    src = ("import org.apache.commons.text.WordUtils;\n"
           "import org.apache.commons.lang3.StringUtils;\n"
           "public class Hello { public static void main(String[] a) {\n"
           "  System.out.println(WordUtils.capitalize(\"hello world\") + StringUtils.length(\"abc\"));\n"
           "} }\n")
    lib = ["org.apache.commons:commons-text:1.11.0"]
    assert_installed(run(cache, "java", src, lib), "Hello World3\n")
    assert_cached(run(cache, "java", src, lib), "Hello World3\n")
    (name,) = [n for n in sets(cache) if n.startswith("java-")]  # not the build's set
    jars = sorted(os.listdir(os.path.join(cache, "deps", name, "lib")))
    assert jars == ["commons-lang3-3.13.0.jar", "commons-text-1.11.0.jar"], jars


@pytest.fixture(scope="module")
def local_repos():
    """A CRAN-like repository with one package built here (R CMD build,
    tools::write_PACKAGES) and a gem source with one gem (gem build, gem
    generate_index): CRAN and rubygems.org are not reachable here."""
    top = tempfile.mkdtemp(prefix="llm-sandbox-test-repos-", dir="/var/tmp")
    os.chmod(top, 0o755)
    env = {"PATH": "/usr/bin:/bin", "HOME": top, "LANG": "C.UTF-8"}

    def sh(*cmd, cwd=top):
        subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)

    def write(rel, text):
        path = os.path.join(top, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)

    write("hellor/DESCRIPTION", "Package: hellor\nVersion: 0.1.0\nTitle: Hello\n"
          "Description: Says hello.\nLicense: MIT\nAuthor: T\nMaintainer: T <t@example.org>\n")
    write("hellor/NAMESPACE", "export(hello)\n")
    write("hellor/R/hello.R", 'hello <- function() "hello from hellor"\n')
    sh("R", "CMD", "build", "hellor")
    os.makedirs(os.path.join(top, "cran/src/contrib"))
    os.rename(os.path.join(top, "hellor_0.1.0.tar.gz"),
              os.path.join(top, "cran/src/contrib/hellor_0.1.0.tar.gz"))
    sh("Rscript", "-e", 'tools::write_PACKAGES("cran/src/contrib", type = "source")')
    write("hellorb/lib/hellorb.rb", 'module Hellorb\n  def self.hello = "hello from hellorb"\nend\n')
    write("hellorb/hellorb.gemspec", 'Gem::Specification.new do |s|\n  s.name = "hellorb"\n'
          '  s.version = "0.1.0"\n  s.summary = "Says hello"\n  s.authors = ["T"]\n'
          '  s.license = "MIT"\n  s.files = ["lib/hellorb.rb"]\nend\n')
    sh("gem", "build", "hellorb.gemspec", cwd=os.path.join(top, "hellorb"))
    os.makedirs(os.path.join(top, "gems/gems"))
    os.rename(os.path.join(top, "hellorb/hellorb-0.1.0.gem"),
              os.path.join(top, "gems/gems/hellorb-0.1.0.gem"))
    sh("gem", "generate_index", "--directory", "gems")
    for dirpath, dirnames, filenames in os.walk(top):
        for n in dirnames + filenames:
            os.chmod(os.path.join(dirpath, n), 0o755 if n in dirnames else 0o644)
    yield {"cran": "file://" + os.path.join(top, "cran"), "gems": "file://" + os.path.join(top, "gems")}
    shutil.rmtree(top, ignore_errors=True)


def test_r_package_from_a_local_repository(cache, local_repos):
    env = {"R_REPO": local_repos["cran"]}
    src = 'library(hellor)\ncat(hello(), "\\n")\n'
    first = run(cache, "r", src, ["hellor"], env=env)
    assert_installed(first, "hello from hellor \n")
    assert "DONE (hellor)" in first["install"]["log"], first
    assert_cached(run(cache, "r", src, ["hellor"], env=env), "hello from hellor \n")
    assert_installed(run(cache, "r", src, ["hellor@0.1.0"], env=env), "hello from hellor \n")
    res = run(cache, "r", src, ["hellor@9.9"], env=env)
    assert res["status"] == "error" and "hellor is not version 9.9" in res["install"]["log"], res
    res = run(cache, "r", src, ["nosuchpkg"], env=env)
    assert res["status"] == "error" and "not installed: nosuchpkg" in res["install"]["log"], res


def test_ruby_gem_from_a_local_source(cache, local_repos):
    env = {"LLM_SANDBOX_RUBY_INSTALL_ENV": "GEM_SOURCE=" + local_repos["gems"]}
    src = 'require "hellorb"\nputs Hellorb.hello\n'
    first = run(cache, "ruby", src, ["hellorb"], env=env)
    assert_installed(first, "hello from hellorb\n")
    assert "Successfully installed hellorb-0.1.0" in first["install"]["log"], first
    assert_cached(run(cache, "ruby", src, ["hellorb"], env=env), "hello from hellorb\n")
    assert_installed(run(cache, "ruby", src, ["hellorb:0.1.0"], env=env), "hello from hellorb\n")


def test_repository_must_be_https_or_a_local_directory(cache):
    for repo in ("http://127.0.0.1:1/", "file:///nonexistent-repo", "ftp://x/"):
        res = run(cache, "r", "cat(1)", ["hellor"], env={"R_REPO": repo})
        assert res["status"] == "refused" and "repository" in res["message"], (repo, res)


def test_set_is_read_only_to_code(cache):
    src = ("import os, pyfiglet\n"
           "for p in ('/deps/python/planted.py', os.path.dirname(pyfiglet.__file__) + '/x'):\n"
           "    try:\n"
           "        open(p, 'w').write('x')\n"
           "        print('wrote', p)\n"
           "    except OSError as e:\n"
           "        print(type(e).__name__)\n")
    res = run(cache, "python", src, ["pyfiglet"])
    assert res["status"] == "ok" and "wrote" not in res["stdout"], res
    (name,) = sets(cache)
    top = os.path.join(cache, "deps", name)
    assert not os.path.exists(os.path.join(top, "python", "planted.py"))
    if ROOT:  # owned by root, writable by no one else, whatever the install made
        for dirpath, dirnames, filenames in os.walk(top):
            for n in dirnames + filenames:
                st = os.lstat(os.path.join(dirpath, n))
                assert st.st_uid == 0, (dirpath, n)
                if not stat.S_ISLNK(st.st_mode):
                    assert not st.st_mode & 0o022, (dirpath, n, oct(st.st_mode))


def test_failed_install_is_an_error_and_not_cached(cache):
    src = "print('never')\n"
    for _ in range(2):
        res = run(cache, "python", src, ["surely-no-such-package-llm-sandbox-zz"])
        assert res["status"] == "error" and res["exit_code"] is None, res
        assert "installing the libraries failed" in res["message"], res
        assert res["stdout"] == "", res
        assert res["install"]["cached"] is False, res
        assert "No matching distribution" in res["install"]["log"], res
    assert sets(cache) == []


@pytest.mark.parametrize("name", ["; rm -rf /", "--index-url=http://127.0.0.1/", "../x",
                                  "pyfiglet; id", "-e .", "file:///etc/passwd"])
def test_hostile_names_refused_before_anything_runs(cache, name):
    res = run(cache, "python", "print(1)", [name])
    assert res["status"] == "refused", res
    assert "install" not in res, res
    assert not os.path.exists(os.path.join(cache, "deps")) or sets(cache) == []


def test_proxy_allows_only_registries(cache, canary):
    """An index on this host's loopback, by HTTP and by HTTPS, even when the
    operator allows its address: the proxy refuses, the canary sees nothing."""
    env = {"LLM_SANDBOX_PYTHON_INSTALL_ENV":
           "PIP_INDEX_URL=http://127.0.0.1:%d/simple PIP_RETRIES=0" % canary.port}
    res = run(cache, "python", "print(1)", ["six"], env=env)
    assert res["status"] == "error", res
    assert "refused 'GET http://127.0.0.1:%d/simple/six/" % canary.port in res["install"]["log"], res
    env = {"LLM_SANDBOX_PYTHON_INSTALL_ENV":
           "PIP_INDEX_URL=https://127.0.0.1:%d/simple PIP_RETRIES=0" % canary.port,
           "LLM_SANDBOX_PYTHON_INSTALL_HOSTS": "127.0.0.1,pypi.org"}
    res = run(cache, "python", "print(1)", ["six"], env=env)
    assert res["status"] == "error", res
    assert "refused CONNECT 127.0.0.1:%d: only port 443" % canary.port in res["install"]["log"], res
    env = {"LLM_SANDBOX_PYTHON_INSTALL_HOSTS": "files.pythonhosted.org",
           "LLM_SANDBOX_PYTHON_INSTALL_ENV": "PIP_RETRIES=0"}
    res = run(cache, "python", "print(1)", ["six"], env=env)
    assert res["status"] == "error", res
    assert "refused CONNECT pypi.org:443: host is not a registry" in res["install"]["log"], res
    assert canary.connections() == 0


def test_concurrent_installs_of_one_set_build_it_once(cache):
    src = "import pyfiglet\nprint('ok')\n"
    results = [None, None]

    def go(i):
        results[i] = run(cache, "python", src, ["pyfiglet"])

    threads = [threading.Thread(target=go, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r["status"] == "ok" and r["stdout"] == "ok\n" for r in results), results
    assert sorted(r["install"]["cached"] for r in results) == [False, True], results
    assert len(sets(cache)) == 1


def test_least_recently_used_set_evicted(cache):
    env = {"LLM_SANDBOX_CACHE_MAX": "10M"}
    assert_installed(run(cache, "python", "import pyfiglet\nprint(1)\n", ["pyfiglet"], env=env),
                     "1\n")
    assert len(sets(cache)) == 1
    assert_installed(run(cache, "javascript", 'require("lodash"); console.log(1)', ["lodash"],
                         env=env), "1\n")
    (left,) = sets(cache)  # pyfiglet's set (8 MB) went to make room
    assert left.startswith("javascript-"), left
    assert_installed(run(cache, "python", "import pyfiglet\nprint(1)\n", ["pyfiglet"], env=env),
                     "1\n")


def test_install_time_is_not_the_programs(cache):
    """The call's timeout covers the program; the install has its own."""
    res = run(cache, "python", "import pyfiglet\nprint(1)\n", ["pyfiglet"], "--timeout", "1")
    assert_installed(res, "1\n")


def test_install_ceiling(cache):
    env = {"LLM_SANDBOX_INSTALL_MAX": "1M"}
    res = run(cache, "python", "print(1)", ["numpy"], env=env)
    assert res["status"] == "error" and res["limit"] == "workspace", res
    assert "LLM_SANDBOX_INSTALL_MAX" in res["message"], res
    assert sets(cache) == []


def test_backend_without_installs_refuses_libraries():
    """Fail closed: a backend that cannot give installs their proxy and
    their mounts says so, rather than installing into a throw-away sandbox
    or with the network open."""
    if installs_supported():
        pytest.skip("backend %s installs libraries (the tests above)" % BACKEND)
    res = Result(sbx("--code", "print(1)", "--libraries", "pyfiglet").json)
    assert res["status"] == "refused", res
    assert "cannot install libraries here" in res["message"], res
    assert "install" not in res, res


# ---- progress while installing (issue 23) ---------------------------------

FIGLET = "import pyfiglet\nprint('figlet ok')\n"


def run_on_a_terminal(args, env):
    """The CLI with its stderr on a pseudo-terminal (stdout a pipe): (exit
    code, stdout, what the terminal got)."""
    master, slave = pty.openpty()
    p = subprocess.Popen([SBX_BIN] + args, env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=slave, cwd="/")
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: every writer closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    out = p.stdout.read()
    return p.wait(timeout=120), out, seen


# conftest.WEAK_LIMIT's warnings as the CLI prints them, each on a line
WEAK_LIMIT_LINE = re.compile(
    rb"llm-sandbox: warning: [^\r\n]*limit (enforced by a fallback|not enforced)[^\n]*\n")


def test_cli_progress_on_a_pipe_and_a_terminal(cache):
    """Plain lines on a pipe, one per step, in order; on a terminal one
    status line rewritten in place and erased before the program's output
    (the result is the same)."""
    env = clean_env({"LLM_SANDBOX_CACHE_DIR": cache})
    r = run_cli(["run", "--code", FIGLET, "--libraries", "pyfiglet"], env=env, timeout=300)
    assert r.rc == 0 and r.out == b"figlet ok\n", r
    lines = [l for l in r.err.decode().splitlines() if not WEAK_LIMIT.search(l)]
    assert lines[0] == "llm-sandbox: installing pyfiglet (python) in a sandbox that reaches " \
        "only the package registries", r.err
    assert re.fullmatch(r"llm-sandbox: finished installing the libraries after \d+\.\d s",
                        lines[1]), r.err
    assert len(lines) == 2 and b"\r" not in r.err and b"\033" not in r.err, r.err
    # cached now: said so, on a terminal
    rc, out, tty = run_on_a_terminal(["run", "--code", FIGLET, "--libraries", "pyfiglet"], env)
    tty = WEAK_LIMIT_LINE.sub(b"", tty)
    assert rc == 0 and out == b"figlet ok\n", (rc, out, tty)
    assert tty.startswith(b"\r\033[Kllm-sandbox: libraries pyfiglet (python) from the cache "
                          b"... 0s"), tty
    assert tty.endswith(b"\r\033[K"), tty  # erased: the terminal is left clean
    assert b"\n" not in tty, tty
    # a fresh install under a terminal: the same words, on the status line
    fresh = tempfile.mkdtemp(prefix="llm-sandbox-test-cache-", dir="/var/tmp")
    try:
        os.chmod(fresh, 0o755)
        env2 = clean_env({"LLM_SANDBOX_CACHE_DIR": fresh})
        rc, out, tty = run_on_a_terminal(["run", "--code", FIGLET, "--libraries", "pyfiglet"],
                                         env2)
        tty = WEAK_LIMIT_LINE.sub(b"", tty)
        assert rc == 0 and out == b"figlet ok\n", (rc, out, tty)
        assert b"\r\033[Kllm-sandbox: installing pyfiglet (python) in a sandbox" in tty, tty
        assert b"\r\033[Kllm-sandbox: finished installing the libraries after " in tty, tty
        assert tty.endswith(b"\r\033[K") and b"\n" not in tty, tty
    finally:
        shutil.rmtree(fresh, ignore_errors=True)


def log_messages(server):
    """The notifications/message the server sent so far (they wait in
    pending while a call's answer is awaited), but the weak-limit warnings
    every run has where no cgroup is writable (test_results.py tests
    those)."""
    got = [m["params"] for m in server.pending if m.get("method") == "notifications/message"]
    server.pending = [m for m in server.pending if m.get("method") != "notifications/message"]
    return [m for m in got if not WEAK_LIMIT.search(str(m.get("data")))]


def test_mcp_logs_install_steps_at_the_clients_level(cache):
    """The logging capability is used: each install step is an info
    message, sent only while logging/setLevel lets info through."""
    c = Client({"LLM_SANDBOX_CACHE_DIR": cache})
    try:
        r = c.s.call_tool("execute_code", {"code": FIGLET, "libraries": ["pyfiglet"]},
                          timeout=300)
        assert r["result"]["structuredContent"]["stdout"] == "figlet ok\n", r
        msgs = log_messages(c.s)
        assert [(m["level"], m["logger"]) for m in msgs] == [("info", "llm-sandbox")] * 2, msgs
        assert msgs[0]["data"].startswith("installing pyfiglet (python) in a sandbox"), msgs
        assert msgs[1]["data"].startswith("finished installing the libraries after "), msgs
        assert c.s.request("logging/setLevel", {"level": "warning"})["result"] == {}
        r = c.s.call_tool("execute_code", {"code": FIGLET, "libraries": ["pyfiglet"]},
                          timeout=300)
        assert r["result"]["structuredContent"]["install"]["cached"] is True, r
        assert log_messages(c.s) == []
        c.s.request("logging/setLevel", {"level": "debug"})
        c.s.call_tool("execute_code", {"code": FIGLET, "libraries": ["pyfiglet"]}, timeout=300)
        assert [m["data"] for m in log_messages(c.s)] == \
            ["libraries pyfiglet (python) from the cache"]
    finally:
        c.finish()
