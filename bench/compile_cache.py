#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What the compile cache saves: a C++ (or Go) program built for the first
time (a comment makes each one new) against the same program again, whose
build is reused. Alternates the two, prints medians and p95 in
milliseconds. A benchmark, not a test: timings on shared machines are
noisy. Uses a private cache directory, removed at the end (so Go's first
run includes its one-time warm-up, which is not counted).

usage: bench/compile_cache.py [--runs N] [--bin PATH] [--backend NAME] [--language cpp|go]
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
import uuid

PROGRAMS = {
    "cpp": "// %s\n#include <iostream>\nint main() { std::cout << 6 * 7 << std::endl; }\n",
    "go": 'package main\n\n// %s\nimport "fmt"\n\nfunc main() { fmt.Println(6 * 7) }\n',
}


def p95(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * 0.95))]


def run(a, env, src, want_cached):
    cmd = [a.bin, "run", "--json", "--language", a.language, "--timeout", "120", "--code", src]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True)
    dt = (time.perf_counter() - t0) * 1000.0
    res = json.loads(r.stdout)
    if res["status"] != "ok" or res["stdout"] != "42\n":
        sys.exit("unexpected result: %r" % res)
    if want_cached is not None and res["build"]["cached"] != want_cached:
        sys.exit("expected cached=%s: %r" % (want_cached, res))
    return dt


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--bin", default=os.path.join(here, "..", "build", "bin", "llm-sandbox"))
    ap.add_argument("--backend", default="bwrap")
    ap.add_argument("--language", default="cpp", choices=sorted(PROGRAMS))
    a = ap.parse_args()
    cache = tempfile.mkdtemp(prefix="llm-sandbox-bench-", dir="/var/tmp")
    os.chmod(cache, 0o755)
    env = {"PATH": "/usr/bin:/bin", "BACKEND": a.backend, "LLM_SANDBOX_CACHE_DIR": cache,
           "HOME": os.environ.get("HOME", "/tmp")}
    try:
        same = PROGRAMS[a.language] % "the same program"
        run(a, env, same, None)  # builds it (and Go's warm-up)
        cold, cached = [], []
        for _ in range(a.runs):
            cold.append(run(a, env, PROGRAMS[a.language] % uuid.uuid4().hex, False))
            cached.append(run(a, env, same, True))
        mc, mh = statistics.median(cold), statistics.median(cached)
        print(f"runs: {a.runs} each, backend {a.backend}, language {a.language}, "
              f"uid {os.getuid()}")
        print(f"  {'':24} {'median ms':>10} {'p95 ms':>10}")
        print(f"  {'a new build':24} {mc:10.1f} {p95(cold):10.1f}")
        print(f"  {'the same build again':24} {mh:10.1f} {p95(cached):10.1f}")
        print(f"  saved by the compile cache (median): {mc - mh:.1f} ms ({mc / mh:.1f}x)")
    finally:
        shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
