# SPDX-License-Identifier: MIT
"""Libraries into a live session, through the real MCP server (stdio,
raw JSON-RPC) on the backend under test: create_session (no libraries),
set a variable, then execute_code with `libraries` naming a package the
host does not have (pyfiglet, from PyPI through the core's filtering
proxy into a fresh dependency cache): it imports from the set copied into
the session's sandbox, and the variable is still set. Then the union:
a second set added on top, the same list again (nothing installed), a
conflicting pin (the install fails, the session keeps what it had), the
copied files read-only to the program, a session created with libraries
taking more, and a language that cannot take a set while it runs
refused with what to do instead.
"""
import os
import shutil
import sys
import tempfile

import pytest

from conftest import BACKEND, CONTAINER, backend_controls

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_installs import local_repos  # noqa: E402,F401  (a CRAN-like repository, a gem source)
from test_sessions import Client  # noqa: E402  (the session-friendly MCP client)

pytestmark = pytest.mark.contract

PYFIGLET = "pyfiglet==1.0.2"
SIX = "six==1.16.0"


@pytest.fixture
def make_client():
    """A server with a fresh dependency cache (and the given environment)."""
    ctl = backend_controls()
    if not all(ctl[c]["level"] == "full" for c in ("network_registries", "host_mounts")):
        pytest.skip("backend %s cannot install libraries (test_backend_without_installs)"
                    % BACKEND)
    d = tempfile.mkdtemp(prefix="llm-sandbox-test-livelibs-", dir="/var/tmp")
    os.chmod(d, 0o755)
    made = []

    def make(extra=None, own_cache=True):
        c = Client(dict(extra or {}, LLM_SANDBOX_CACHE_DIR=d if own_cache else None))
        made.append(c)
        return c
    yield make
    for c in made:
        c.finish()
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def client(make_client):
    return make_client()


def ok(sc):
    assert sc["status"] == "ok", sc
    return sc


def test_python_library_into_a_live_session(client):
    assert __import__("importlib").util.find_spec("pyfiglet") is None, \
        "the host must not have pyfiglet for this test to mean anything"
    sid = client.create("python")
    ok(client.run(sid, "x = 41\nimport sys\nbefore = list(sys.path)"))
    r = ok(client.run(sid, "import pyfiglet\nprint(pyfiglet.__file__)\n"
                           "print(x + 1)\nprint(bool(pyfiglet.figlet_format('hi').strip()))",
                      libraries=[PYFIGLET]))
    assert r["stdout"] == "/tmp/.sbx/libs/1/python/pyfiglet/__init__.py\n42\nTrue\n", r
    assert r["install"]["cached"] is False, r
    # the files are read-only to the program; a subprocess (fresh
    # interpreter, the session's environment) finds the set too
    r = ok(client.run(sid, "import os, pyfiglet, subprocess, sys\n"
                           "p = pyfiglet.__file__\n"
                           "print(oct(os.stat(p).st_mode & 0o777))\n"
                           "try:\n    open(p, 'a')\nexcept PermissionError:\n    print('denied')\n"
                           "print(subprocess.run([sys.executable, '-c', 'import pyfiglet'])"
                           ".returncode)\n"
                           "print(x)"))
    assert r["stdout"] == "0o444\ndenied\n0\n41\n", r
    # the same list again, and a subset: nothing to install or copy
    r = ok(client.run(sid, "print(x)", libraries=[PYFIGLET]))
    assert r["stdout"] == "41\n" and "install" not in r, r
    # a second set: the union, resolved together, first on the path
    r = ok(client.run(sid, "import six, pyfiglet\nprint(six.__file__)\n"
                           "print(pyfiglet.__file__)\nprint(x)", libraries=[SIX]))
    assert r["stdout"] == ("/tmp/.sbx/libs/2/python/six.py\n"
                           "/tmp/.sbx/libs/1/python/pyfiglet/__init__.py\n41\n"), r
    # a conflicting pin: the union does not resolve, the install fails,
    # the session keeps its libraries and variables
    sc, err = client.call("execute_code", dict(session_id=sid, code="print(x)",
                                               libraries=["pyfiglet==0.8.post1"]))
    assert err and sc["status"] == "error" and "install" in sc["message"], sc
    assert any("keeps the libraries and variables" in w for w in sc["warnings"]), sc
    assert "pyfiglet==0.8.post1" in sc["install"]["log"] \
        or "conflict" in sc["install"]["log"].lower(), sc
    r = ok(client.run(sid, "import six, pyfiglet\nprint(x)"))
    assert r["stdout"] == "41\n", r
    listed = client.ok("list_sessions", {})
    mine = [s for s in listed["sessions"] if s["session_id"] == sid]
    assert mine and mine[0]["libraries"] == [PYFIGLET, SIX], listed


def test_interpreter_restart_keeps_the_libraries(client):
    """An interpreter that ended starts again with the session's sets on its
    path (the environment was pointed at the newest)."""
    sid = client.create("python")
    ok(client.run(sid, "import six", libraries=[SIX]))
    r = client.run(sid, "import os\nos._exit(3)")
    assert r["exit_code"] == 3, r
    r = ok(client.run(sid, "import six\nprint(six.__file__)"))
    assert r["stdout"] == "/tmp/.sbx/libs/1/python/six.py\n", r


def test_session_created_with_libraries_takes_more(client):
    sid = client.create("python", libraries=[SIX])
    ok(client.run(sid, "import six\ny = six.__file__"))
    r = ok(client.run(sid, "import pyfiglet\nprint(y)\nprint(pyfiglet.__file__)",
                      libraries=[PYFIGLET]))
    assert r["stdout"] == ("/deps/python/six.py\n"
                           "/tmp/.sbx/libs/1/python/pyfiglet/__init__.py\n"), r


def test_javascript_library_into_a_live_session(client):
    sid = client.create("javascript")
    ok(client.run(sid, "let x = 41"))
    r = ok(client.run(sid, "const leftPad = require('left-pad');\n"
                           "console.log(require.resolve('left-pad'));\n"
                           "console.log(leftPad(String(x + 1), 5, '0'));",
                      libraries=["left-pad@1.3.0"]))
    assert r["stdout"] == "/tmp/.sbx/libs/1/node_modules/left-pad/index.js\n00042\n", r


def test_javascript_import_finds_a_live_library(client):
    """ES modules ignore NODE_PATH: import() of a set copied into the live
    session is found all the same (the driver's resolve hook), the newest
    set first, also by an interpreter started again; a name no set has is
    still not found."""
    sid = client.create("javascript")
    r = ok(client.run(sid, "console.log(process.version, "
                           "Boolean(require('vm').constants?.USE_MAIN_CONTEXT_DEFAULT_LOADER))"))
    version, can_import = r["stdout"].split()
    if can_import != "true":  # session.js: import() in a cell needs this loader
        pytest.skip("this Node (%s, the %s image's) cannot import() in a session cell at all; "
                    "require() finds live libraries (test_links_in_a_set_are_not_copied)"
                    % (version, BACKEND))
    ok(client.run(sid, "let x = 41"))
    cell = "import('left-pad').then((m) => console.log(m.default(String(x + 1), 5, '0')))"
    r = ok(client.run(sid, cell, libraries=["left-pad@1.3.0"]))
    assert r["stdout"] == "00042\n", r
    r = ok(client.run(sid, "import('semver').then((m) => console.log(m.default.valid('1.2.3')))",
                      libraries=["semver@7.6.0"]))
    assert r["stdout"] == "1.2.3\n", r
    r = client.run(sid, "import('no-such-package-here').catch((e) => console.log(e.code))")
    assert r["stdout"] == "ERR_MODULE_NOT_FOUND\n", r
    # an interpreter started again (the session's environment names the
    # newest set) imports it too
    r = client.run(sid, "process.kill(process.pid, 'SIGKILL')")
    assert r["status"] != "ok" or r["exit_code"] != 0, r
    r = ok(client.run(sid, "import('left-pad').then((m) => console.log(m.default('7', 3, '0')))"))
    assert r["stdout"] == "007\n", r


def test_links_in_a_set_are_not_copied(client):
    """npm links a package's commands into node_modules/.bin: the copy
    leaves links out (and says so); require() does not need them."""
    sid = client.create("javascript")
    r = ok(client.run(sid, "const fs = require('fs');\n"
                           "console.log(require('semver').valid('1.2.3'));\n"
                           "console.log(fs.existsSync('/tmp/.sbx/libs/1/node_modules/.bin/semver'))",
                      libraries=["semver@7.6.0"]))
    assert r["stdout"] == "1.2.3\nfalse\n", r
    assert any("symbolic links" in w and "not copied" in w for w in r["warnings"]), r


def test_the_copy_never_follows_a_link_the_program_planted(client):
    """The program owns /tmp: a link where the next copy would go (to the
    workspace, or to /etc) makes that copy fail, writes nothing through
    it, and the next call copies into a fresh directory."""
    sid = client.create("python")
    ok(client.run(sid, "import os\nx = 41\nos.makedirs('/tmp/.sbx/libs', exist_ok=True)\n"
                       "os.symlink('/workspace', '/tmp/.sbx/libs/1')\n"
                       "os.makedirs('/tmp/.sbx/libs/2')\n"
                       "os.symlink('/etc', '/tmp/.sbx/libs/2/python')"))
    for n in (1, 2):
        sc, err = client.call("execute_code", dict(session_id=sid, code="print(x)",
                                                   libraries=[SIX]))
        assert err and sc["status"] == "error", sc
        assert sc["message"].startswith("copying the libraries into the session's sandbox "
                                        "failed at /tmp/.sbx/libs/%d/" % n), sc
    r = ok(client.run(sid, "import os, six\nprint(six.__file__)\nprint(x)\n"
                           "print(sorted(os.listdir('/workspace')))\n"
                           "print(os.path.exists('/etc/six.py'))", libraries=[SIX]))
    assert r["stdout"] == "/tmp/.sbx/libs/3/python/six.py\n41\n[]\nFalse\n", r


def test_ruby_gem_into_a_live_session(make_client, local_repos):
    client = make_client({"LLM_SANDBOX_RUBY_INSTALL_ENV": "GEM_SOURCE=" + local_repos["gems"]})
    sid = client.create("ruby")
    ok(client.run(sid, "x = 41"))
    r = ok(client.run(sid, 'require "hellorb"\nputs Hellorb.hello\nputs x + 1',
                      libraries=["hellorb"]))
    assert r["stdout"] == "hello from hellorb\n42\n", r
    r = ok(client.run(sid, 'puts Gem.loaded_specs["hellorb"].full_gem_path'))
    assert r["stdout"] == "/tmp/.sbx/libs/1/ruby/gems/hellorb-0.1.0\n", r


def test_r_package_into_a_live_session(make_client, local_repos):
    if CONTAINER:
        pytest.skip("the %s test image has no R" % BACKEND)
    client = make_client({"R_REPO": local_repos["cran"]})
    sid = client.create("r")
    ok(client.run(sid, "x <- 41"))
    r = ok(client.run(sid, 'library(hellor)\ncat(hello(), x + 1, "\\n")\n'
                           'cat(find.package("hellor"), "\\n")', libraries=["hellor"]))
    assert r["stdout"] == "hello from hellor 42 \n/tmp/.sbx/libs/1/r/hellor \n", r


def test_go_session_takes_libraries_at_its_next_build(make_client):
    """(In the server's default cache: a fresh one would first build Go's
    warm-up set, some 50 s here, which test_installs.py already covers.)"""
    if CONTAINER:
        pytest.skip("the %s test image has no Go toolchain" % BACKEND)
    client = make_client(own_cache=False)
    sid = client.create("go")
    src = ('package main\n\nimport (\n\t"fmt"\n\n\t"github.com/google/uuid"\n)\n\n'
           'func main() {\n\tfmt.Println(uuid.NewSHA1(uuid.NameSpaceDNS, []byte("x")).Version())\n}\n')
    r = ok(client.run(sid, src, libraries=["github.com/google/uuid@v1.6.0"], timeout=120))
    assert r["stdout"] == "VERSION_5\n", r
    r = ok(client.run(sid, src, timeout=120))
    assert r["stdout"] == "VERSION_5\n" and "install" not in r, r


def test_language_that_builds_against_deps_is_refused(client):
    if CONTAINER:
        pytest.skip("the %s test image has no Java" % BACKEND)
    sid = client.create("java")
    sc, err = client.call("execute_code", dict(
        session_id=sid, libraries=["com.google.code.gson:gson:2.10.1"],
        code="public class Main { public static void main(String[] a) {} }"))
    assert err and sc["status"] == "refused", sc
    assert "cannot take new libraries" in sc["message"] and "create_session" in sc["message"], sc
