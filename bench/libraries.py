#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What a cached dependency set costs: a run with --libraries whose set is
already in the cache, against the same run without libraries, through the
CLI (one process per run) and through one MCP server on stdio (one
tools/call per run). Alternates the two kinds, prints medians and p95 in
milliseconds and the difference. A benchmark, not a test: timings on shared
machines are noisy.

The first run installs the set (into a private cache that is removed at
the end) and is not counted.

usage: bench/libraries.py [--runs N] [--bin PATH] [--backend NAME]
                          [--language L --library NAME --code SRC]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from mcpclient import Mcp

# The same program both ways (it does not import the library), so the
# difference is what finding and mounting the set costs, not the import.
DEFAULT = {
    "python": ("pyfiglet", "print(1)"),
    "javascript": ("is-number", "console.log(1)"),
}


def p95(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * 0.95))]


def cli(a, env, libs):
    cmd = [a.bin, "run", "--json", "--language", a.language, "--code", a.code]
    if libs:
        cmd += ["--libraries", a.library]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True)
    dt = (time.perf_counter() - t0) * 1000.0
    res = json.loads(r.stdout)
    if res["status"] != "ok" or (libs and not res["install"]["cached"] and a.counting):
        sys.exit("unexpected result: %r" % res)
    return dt


def mcp(a, server, libs):
    args = {"code": a.code, "language": a.language}
    if libs:
        args["libraries"] = [a.library]
    t0 = time.perf_counter()
    msg = server.call("tools/call", {"name": "execute_code", "arguments": args})
    dt = (time.perf_counter() - t0) * 1000.0
    res = msg["result"]["structuredContent"]
    if res["status"] != "ok" or (libs and not res["install"]["cached"]):
        sys.exit("unexpected result: %r" % res)
    return dt


def report(title, plain, cached):
    mp, mc = statistics.median(plain), statistics.median(cached)
    print(f"{title}")
    print(f"  {'without libraries':26} {mp:10.1f} {p95(plain):10.1f}")
    print(f"  {'with a cached set':26} {mc:10.1f} {p95(cached):10.1f}")
    print(f"  cost of the cached set (median): {mc - mp:+.1f} ms")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--bin", default=os.path.join(here, "..", "build", "bin", "llm-sandbox"))
    ap.add_argument("--backend", default="bwrap")
    ap.add_argument("--language", default="python")
    ap.add_argument("--library")
    ap.add_argument("--code")
    a = ap.parse_args()
    lib, src = DEFAULT.get(a.language, (None, None))
    a.library = a.library or lib
    a.code = a.code or src
    if not a.library or not a.code:
        sys.exit("give --library and --code for %s" % a.language)
    cache = tempfile.mkdtemp(prefix="llm-sandbox-bench-", dir="/var/tmp")
    os.chmod(cache, 0o755)
    env = {"PATH": "/usr/bin:/bin", "BACKEND": a.backend, "LLM_SANDBOX_CACHE_DIR": cache,
           "HOME": os.environ.get("HOME", "/tmp")}
    try:
        a.counting = False
        cli(a, env, True)  # installs the set
        for _ in range(3):
            cli(a, env, False), cli(a, env, True)
        a.counting = True
        plain, cached = [], []
        for _ in range(a.runs):
            plain.append(cli(a, env, False))
            cached.append(cli(a, env, True))
        print(f"runs: {a.runs} each, backend {a.backend}, language {a.language}, "
              f"library {a.library}, uid {os.getuid()}")
        print(f"  {'':26} {'median ms':>10} {'p95 ms':>10}")
        report("CLI (a process per run):", plain, cached)
        server = Mcp(a.bin, env)
        for _ in range(3):
            mcp(a, server, False), mcp(a, server, True)
        plain, cached = [], []
        for _ in range(a.runs):
            plain.append(mcp(a, server, False))
            cached.append(mcp(a, server, True))
        server.close()
        report("MCP (tools/call on one stdio server):", plain, cached)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
