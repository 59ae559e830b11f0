# SPDX-License-Identifier: MIT
"""Every language with its real toolchain (issue 4): hello world with
standard input and unicode, a compile error as a clean result with the
compiler's words, a runtime error's exit code, the wall-time and memory
limits, Go's test mode and Java's free class names, library names checked
against each ecosystem's grammar, and the toolchain version probed in a
sandbox. Part of the backend contract suite: every local backend runs every
language.

Go compiles its standard library into an empty build cache in every
sandbox (no warm cache yet), so each Go build costs seconds; the Go cases
are few and get a longer timeout."""
import json
import os
import re
import subprocess
import time
import uuid

import pytest

import containers
from conftest import CONTAINER, SBX_BIN, clean_env, describe_pids, sbx, skip_unless_warm_sets

pytestmark = pytest.mark.contract

GO_TIMEOUT = "120"

# language -> program that reads a line, greets with unicode, prints 6*7
HELLO = {
    "javascript": ('const line = require("fs").readFileSync(0, "utf8").trim();\n'
                   'console.log(`héllo ${line} ✓`);\nconsole.log(6 * 7);\n'),
    "go": ('package main\n\nimport (\n\t"bufio"\n\t"fmt"\n\t"os"\n\t"strings"\n)\n\n'
           'func main() {\n\tline, _ := bufio.NewReader(os.Stdin).ReadString(\'\\n\')\n'
           '\tfmt.Printf("héllo %s ✓\\n", strings.TrimSpace(line))\n\tfmt.Println(6 * 7)\n}\n'),
    "cpp": ('#include <iostream>\n#include <string>\nint main() {\n    std::string line;\n'
            '    std::getline(std::cin, line);\n    std::cout << "héllo " << line << " ✓\\n";\n'
            '    std::cout << 6 * 7 << std::endl;\n}\n'),
    "java": ('import java.util.Scanner;\n\npublic class Hello {\n'
             '    public static void main(String[] args) {\n'
             '        String line = new Scanner(System.in).nextLine().trim();\n'
             '        System.out.println("héllo " + line + " ✓");\n'
             '        System.out.println(6 * 7);\n    }\n}\n'),
    "r": ('line <- readLines(file("stdin"), n = 1)\ncat("héllo", line, "✓\\n")\n'
          'cat(6 * 7, "\\n", sep = "")\n'),
    "ruby": 'line = $stdin.gets.strip\nputs "héllo #{line} ✓"\nputs 6 * 7\n',
}

COMPILE_ERROR = {
    "go": ("package main\n\nfunc main() {\n\tvar x int = \"s\"\n}\n",
           "cannot use \"s\""),
    "cpp": ("int main() { int x = \"s\"; }\n", "invalid conversion"),
    "java": ("public class Bad { public static void main(String[] a) { int x = \"s\"; } }\n",
             "incompatible types"),
}

RUNTIME_ERROR = {
    "javascript": 'console.error("bad"); process.exit(3);\n',
    "cpp": '#include <cstdio>\nint main() { std::fputs("bad\\n", stderr); return 3; }\n',
    "java": ('public class E { public static void main(String[] a) {\n'
             '    System.err.println("bad"); System.exit(3); } }\n'),
    "r": 'message("bad")\nquit(status = 3)\n',
    "ruby": '$stderr.puts "bad"\nexit 3\n',
}

ENDLESS = {
    "javascript": "for (;;) {}\n",
    "cpp": "int main() { for (volatile int i = 0;; i++) {} }\n",
    "java": "public class L { public static void main(String[] a) { for (;;) {} } }\n",
    "r": "repeat {}\n",
    "ruby": "loop {}\n",
}

HOGS = {
    "javascript": ("const a = []; for (;;) a.push(new Array(1e6).fill(1));\n"),
    "cpp": ("#include <vector>\n#include <cstring>\nint main() { std::vector<char*> v;\n"
            "  for (;;) { char *p = new char[1 << 24]; std::memset(p, 1, 1 << 24);"
            " v.push_back(p); } }\n"),
    "ruby": "a = []\nloop { a << ('x' * (1 << 24)) }\n",
}

LIBRARIES = {
    # language: (accepted names, refused names)
    "javascript": (["lodash", "is-number@7.0.0", "@types/node", "left-pad@^1.3.0"],
                   ["Lodash", "../x", "lodash@npm:evil", "http://x/y.tgz", "a b"]),
    "go": (["github.com/google/uuid", "golang.org/x/text@v0.14.0", "example.com/m@latest"],
           ["uuid", "../x", "github.com/a/b@master", "-insecure", "Github.com/a"]),
    "java": (["org.apache.commons:commons-lang3:3.14.0", "g:a:jar:1.0"],
             ["commons-lang3", "a:b", "a:b:c:d:e:f", "a;b:c:1", ":a:1"]),
    "r": (["ggplot2", "data.table", "Rcpp@1.0.12"],
          ["1abc", "a", "x.", "pkg; system('id')", "pkg@latest"]),
    "ruby": (["rake", "activesupport:7.1.3", "nokogiri"],
             ["-v", "../x", "rake:>=1", "a b", "rake; id"]),
}


def run(lang, src, *args, **kw):
    res = sbx("--language", lang, "--code", src, *args, **kw).json
    return res


def go_args(lang):
    return ["--timeout", GO_TIMEOUT] if lang == "go" else []


@pytest.mark.parametrize("lang", sorted(HELLO))
def test_hello_stdin_unicode(lang):
    res = run(lang, HELLO[lang], "--stdin", "-", *go_args(lang), input="wörld\n".encode())
    assert res["status"] == "ok", res
    assert res["stdout"] == "héllo wörld ✓\n42\n", res
    assert res["language"] == lang, res


@pytest.mark.parametrize("lang", sorted(COMPILE_ERROR))
def test_compile_error_is_a_clean_result(lang):
    src, phrase = COMPILE_ERROR[lang]
    res = run(lang, src, *go_args(lang))
    assert res["status"] == "error" and res["exit_code"] not in (None, 0), res
    assert phrase in res["stderr"], res
    assert res["stdout"] == "", res


@pytest.mark.parametrize("lang", sorted(RUNTIME_ERROR))
def test_runtime_error_exit_code(lang):
    res = run(lang, RUNTIME_ERROR[lang])
    assert res["status"] == "error" and res["exit_code"] == 3, res
    assert "bad" in res["stderr"], res


@pytest.mark.parametrize("lang", sorted(ENDLESS))
def test_wall_time_ends_an_endless_loop(lang):
    res = run(lang, ENDLESS[lang], "--timeout", "3")
    assert res["status"] == "timeout" and res["limit"] == "wall_time", res
    assert res["duration_ms"] < 15000, res


@pytest.mark.parametrize("lang", sorted(HOGS))
def test_memory_limit_ends_a_hog(lang):
    res = run(lang, HOGS[lang], "--memory", "128M", "--timeout", "60")
    assert res["status"] in ("oom", "error", "killed"), res
    assert res["status"] != "ok", res
    if res["status"] == "oom":
        assert res["limit"] == "memory", res


GO_WARM_PROBE = r"""package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	links, files := 0, 0
	filepath.Walk(os.Getenv("GOCACHE"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode()&os.ModeSymlink != 0 {
			if t, _ := os.Readlink(p); strings.HasPrefix(t, "/warm/") {
				links++
			}
		} else if err == nil && fi.Mode().IsRegular() {
			files++
		}
		return nil
	})
	err := os.WriteFile("/warm/go-build/planted", []byte("x"), 0o644)
	fmt.Println(links > 100, files > 0, err != nil)
}
"""


def test_go_build_cache_is_warm():
    """Each Go run's own writable GOCACHE is seeded with links to the warm-up
    set at /warm (the standard library compiled once per toolchain), which
    the program can read but not change; what the build adds is its own."""
    skip_unless_warm_sets()
    src = GO_WARM_PROBE + "// %s\n" % uuid.uuid4().hex  # built, not from the compile cache
    res = run("go", src, "--timeout", GO_TIMEOUT)
    assert res["status"] == "ok" and res["stdout"] == "true true true\n", res
    assert res["build"] == {"cached": False}, res


def unique_cpp(body):
    """C++ no earlier run built (the compile cache is shared by design)."""
    return "// %s\n#include <cstdio>\n#include <unistd.h>\n%s" % (uuid.uuid4().hex, body)


def test_cpp_precompiled_standard_header():
    """<bits/stdc++.h> is precompiled once (the warm-up set at /warm, which
    the build searches first); a program including it builds and runs, and
    one under another standard, where the PCH does not apply, too."""
    skip_unless_warm_sets()
    src = ('#include <bits/stdc++.h>\n// %s\n#include <unistd.h>\nusing namespace std;\n'
           'int main() { vector<int> v{3, 1, 2}; sort(v.begin(), v.end());\n'
           '  cout << v[0] << access("/warm/include/bits/stdc++.h.gch", R_OK) << endl; }\n'
           % uuid.uuid4().hex)
    res = run("cpp", src)
    assert res["status"] == "ok" and res["stdout"] == "10\n", res
    res = run("cpp", src, extra_env={"LLM_SANDBOX_CPP_STD": "c++20"})
    assert res["status"] == "ok" and res["stdout"] == "10\n", res
    assert res["stderr"] == "", res


def test_cpp_identical_build_is_cached():
    """The second identical build reuses the first one's binary and
    replays its diagnostics; other flags (another standard) are another
    build."""
    src = unique_cpp('#warning "compiling now"\nint main() { std::puts("42"); }\n')
    first = run("cpp", src)
    assert first["status"] == "ok" and first["stdout"] == "42\n", first
    assert first["build"] == {"cached": False}, first
    assert '#warning "compiling now"' in first["stderr"], first
    second = run("cpp", src)
    assert second["status"] == "ok" and second["stdout"] == "42\n", second
    assert second["build"] == {"cached": True}, second
    assert second["stderr"] == first["stderr"], second
    third = run("cpp", src, extra_env={"LLM_SANDBOX_CPP_STD": "c++20"})
    assert third["status"] == "ok" and third["build"] == {"cached": False}, third


def test_cpp_cached_build_cannot_be_changed_by_the_program():
    """Outputs are taken from the box before the program runs: a program
    that replaces its own binary changes nothing for the next run."""
    src = unique_cpp('int main() { unlink("main"); FILE *f = std::fopen("main", "w");\n'
                     '  std::fputs("#!/bin/sh\\necho planted\\n", f); std::fclose(f);\n'
                     '  std::puts("42"); }\n')
    assert run("cpp", src)["stdout"] == "42\n"
    again = run("cpp", src)
    assert again["build"] == {"cached": True} and again["stdout"] == "42\n", again


def test_cpp_failed_build_is_not_cached():
    src = unique_cpp("int main() { return undeclared; }\n")
    for _ in range(2):
        res = run("cpp", src)
        assert res["status"] == "error" and "undeclared" in res["stderr"], res
        assert res["build"] == {"cached": False}, res


def test_java_identical_build_is_cached():
    """A directory output (javac's classes/, nested classes included)."""
    src = ("// %s\npublic class Hello {\n  static class In { int v = 42; }\n"
           "  public static void main(String[] a) { System.out.println(new In().v); }\n}\n"
           % uuid.uuid4().hex)
    first = run("java", src)
    assert first["stdout"] == "42\n" and first["build"] == {"cached": False}, first
    second = run("java", src)
    assert second["stdout"] == "42\n" and second["build"] == {"cached": True}, second


def test_go_identical_build_is_cached():
    src = ('package main\n\n// %s\nimport "fmt"\n\nfunc main() { fmt.Println(42) }\n'
           % uuid.uuid4().hex)
    first = run("go", src, "--timeout", GO_TIMEOUT)
    assert first["stdout"] == "42\n" and first["build"] == {"cached": False}, first
    second = run("go", src, "--timeout", GO_TIMEOUT)
    assert second["stdout"] == "42\n" and second["build"] == {"cached": True}, second


def test_go_test_mode_runs_go_test_verbose():
    src = ("package main\n\nimport \"testing\"\n\nfunc add(a, b int) int { return a + b }\n\n"
           "func TestAdd(t *testing.T) {\n\tif add(2, 3) != 5 {\n\t\tt.Fatal(\"bad sum\")\n\t}\n}\n\n"
           "func TestFails(t *testing.T) {\n\tt.Fatal(\"expected failure\")\n}\n")
    res = run("go", src, "--timeout", GO_TIMEOUT)
    assert res["status"] == "error" and res["exit_code"] == 1, res
    out = res["stdout"]
    assert "=== RUN   TestAdd" in out and "--- PASS: TestAdd" in out, res
    assert "--- FAIL: TestFails" in out and "expected failure" in out, res


def test_java_any_class_name_and_package():
    src = ("package demo.app;\n\nclass Helper { static int six() { return 6; } }\n\n"
           "public final class Greeter {\n    public static void main(String[] a) {\n"
           "        System.out.println(Helper.six() * 7);\n    }\n}\n")
    res = run("java", src)
    assert res["status"] == "ok" and res["stdout"] == "42\n", res


@pytest.mark.parametrize("src,out", [
    ('import { setTimeout as sleep } from "node:timers/promises";\n'
     'await sleep(10);\nconsole.log(typeof import.meta.url, 6 * 7);\n', "string 42\n"),
    ("console.log(await Promise.resolve(42));\n", "42\n"),
    ('// import x from "y"; export default 1\nconst s = "await import";\n'
     'function f() { return [1, 2].map(async (x) => await x); }\n'
     'console.log(typeof require, f().length, s.length);\n', "function 2 12\n"),
], ids=["module", "top-level-await", "commonjs"])
def test_javascript_module_or_commonjs(src, out):
    """ES module syntax runs as a module (top-level await included); other
    code stays CommonJS, where require works (comments, strings and awaits
    inside functions do not count)."""
    res = run("javascript", src)
    assert res["status"] == "ok" and res["stdout"] == out, res


# Languages whose manifests have no install recipe: valid names reach that
# refusal. (Every language here has one now: test_installs.py.)
NO_INSTALLS = set()


@pytest.mark.parametrize("lang", sorted(LIBRARIES))
def test_library_names_checked_against_the_grammar(lang):
    """Bad names are refused as names, before anything runs (no install
    starts: the result has no install report); valid ones pass the check."""
    good, bad = LIBRARIES[lang]
    for name in good if lang in NO_INSTALLS else []:
        res = run(lang, "x", "--libraries", name)
        assert res["status"] == "refused", res
        assert "cannot install libraries" in res["message"], (name, res)
    for name in bad:
        res = run(lang, "x", "--libraries", name)
        assert res["status"] == "refused", res
        assert "not a valid" in res["message"], (name, res)
        assert "install" not in res, (name, res)


def test_cpp_refuses_libraries():
    res = run("cpp", "int main(){}", "--libraries", "boost")
    assert res["status"] == "refused" and "cannot install libraries" in res["message"], res


def test_toolchain_versions_are_probed():
    """get_language_details' version comes from running each toolchain's
    version command in a sandbox (asked here through the MCP server)."""
    langs = ["python", "javascript", "go", "cpp", "java", "r", "ruby"]
    if CONTAINER:  # the others have no image here (see conftest)
        langs = [l for l in langs if l in containers.IMAGE_LANGS]
    msgs = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "test", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    msgs += [{"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
              "params": {"name": "get_language_details", "arguments": {"language": lang}}}
             for i, lang in enumerate(langs)]
    p = subprocess.Popen([SBX_BIN], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         env=clean_env(mark=False), cwd="/")
    answers = {}
    try:
        p.stdin.write("".join(json.dumps(m) + "\n" for m in msgs).encode())
        p.stdin.flush()
        while len(answers) < len(langs) + 1:  # the end of input would cancel the calls
            line = p.stdout.readline()
            assert line, "the server ended early: %r" % answers
            m = json.loads(line)
            answers[m["id"]] = m
    finally:
        p.stdin.close()
        assert p.wait(60) == 0
    for i, lang in enumerate(langs):
        details = answers[i + 1]["result"]["structuredContent"]
        version = details.get("version")
        assert isinstance(version, str) and re.match(r"^[0-9]+(\.[0-9]+)*$", version), \
            (lang, details)


SLOW_PROBE = """\
# a data-only language whose version command never ends on its own
name: slowprobe
kind: language
version: 1.0.0
abi: "1.0"
description: Test language for test_languages.py
language:
  source_file: main.sh
  run: [/bin/sh, "{{source}}"]
  version_command: [/bin/sleep, "{token}"]
  version_pattern: "([0-9]+)"
"""


def _cmdline_pids(token):
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/cmdline" % name, "rb") as f:
                    args = f.read().split(b"\0")
            except OSError:
                continue
            if token.encode() in args:
                found.append(int(name))
    return found


def test_the_server_ends_without_waiting_for_a_probe(tmp_path):
    """A server that loses its client ends at once, never waiting for a
    toolchain's probe (a slow machine's probes take minutes): the probe in
    progress is cancelled and its sandbox is gone once the server is."""
    token = "%d.%03d" % (5000 + uuid.uuid4().int % 1000, uuid.uuid4().int % 1000)
    (tmp_path / "slowprobe.yaml").write_text(SLOW_PROBE.format(token=token))
    env = clean_env({"LLM_SANDBOX_PLUGIN_PATH": str(tmp_path), "LLM_SANDBOX_LANGUAGES": "slowprobe",
                     "LLM_SANDBOX_DEFAULT_LANGUAGE": "slowprobe",
                     "LLM_SANDBOX_TIMEOUT": "3000", "LLM_SANDBOX_MAX_TIMEOUT": "3000",
                     "LLM_SANDBOX_CACHE_DIR": str(tmp_path / "cache")})
    if CONTAINER:  # the probe runs in the test image, which has /bin/sleep
        env["SANDBOX_IMAGE_SLOWPROBE"] = containers.IMAGE
    p = subprocess.Popen([SBX_BIN], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, cwd="/")
    try:
        deadline = time.monotonic() + 120
        while not _cmdline_pids(token):
            assert p.poll() is None, p.stderr.read().decode(errors="replace")
            assert time.monotonic() < deadline, "the version probe never started"
            time.sleep(0.1)
        p.stdin.close()
        try:
            rc = p.wait(120)  # the probe would run for 5,000 s
        except subprocess.TimeoutExpired:
            p.kill()
            raise AssertionError("the server waited for its probe after its input closed")
        assert rc == 0, p.stderr.read().decode(errors="replace")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    left = _cmdline_pids(token)
    assert not left, "the probe's processes outlived the server: %s" % describe_pids(left)


PY_LIKE_A_SCRIPT = r"""
import json, os, sys
print(json.dumps({"argv": sys.argv, "file": __file__, "path": sys.path,
                  "names": sorted(k for k in globals() if not k.startswith("__")),
                  "site": [d for d in __import__("site").getsitepackages() if os.path.isdir(d)],
                  "numpy": __import__("importlib.util").util.find_spec("numpy") is not None}))
def f():
    raise ValueError("bad")
try:
    f()
finally:
    sys.stdout.flush()
"""


def test_python_one_shot_is_like_python3_main_py():
    """A one-shot program starts through the starter with -S (langs/python/
    start.py) yet sees what `python3 main.py` shows it: its argv and
    __file__, its directory first on sys.path and the site-packages
    directories after the standard library, no name of the starter's, the
    traceback from its own frames, exit status 1; and exit() works."""
    res = run("python", PY_LIKE_A_SCRIPT)
    assert res["status"] == "error" and res["exit_code"] == 1, res
    seen = json.loads(res["stdout"])
    assert seen["argv"] == ["main.py"] and seen["file"] == "/workspace/main.py", seen
    assert seen["path"][0] == "/workspace", seen
    assert seen["names"] == ["json", "os", "sys"], seen
    stdlib = [i for i, p in enumerate(seen["path"]) if p.endswith("/lib-dynload")]
    assert seen["site"] and stdlib, seen
    for d in seen["site"]:
        assert seen["path"].index(d) > stdlib[0], (d, seen)
    if not CONTAINER:
        host = subprocess.run(["/usr/bin/python3", "-c", "import importlib.util; "
                               "print(importlib.util.find_spec('numpy') is not None)"],
                              capture_output=True, text=True, env=clean_env())
        assert seen["numpy"] == (host.stdout.strip() == "True"), (seen, host)
    tb = res["stderr"].splitlines()
    assert tb[0] == "Traceback (most recent call last):", res
    assert tb[1].startswith('  File "/workspace/main.py"'), res
    assert "_sbx_start" not in res["stderr"] and tb[-1] == "ValueError: bad", res
    res = run("python", "print('x'); exit(4)")
    assert res["exit_code"] == 4 and res["stdout"] == "x\n", res
