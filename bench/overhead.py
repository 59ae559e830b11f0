#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Per-run overhead of llm-sandbox over a bare interpreter start.

Runs `llm-sandbox run --code 'pass'` and `/usr/bin/python3 -c pass` many
times, alternating, and prints medians and p95 in milliseconds plus the
difference. A benchmark, not a test: timings on shared machines are noisy.

usage: bench/overhead.py [--runs N] [--bin PATH] [--backend NAME]

Container backends (docker, podman) find their daemon and images through
DOCKER_HOST / CONTAINER_HOST, SANDBOX_IMAGE_<LANG> and LLM_SANDBOX_*
settings (LLM_SANDBOX_PODMAN_ALLOW_HOST_CGROUPNS=true for Podman 4.3 on
cgroup v1), passed through from the environment; each run there is a
one-shot cold container.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time


def timed(cmd, env):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dt = (time.perf_counter() - t0) * 1000.0
    if r.returncode != 0:
        sys.exit(f"{cmd[0]} failed with {r.returncode}")
    return dt


def p95(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * 0.95))]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--bin", default=os.path.join(here, "..", "build", "bin", "llm-sandbox"))
    ap.add_argument("--backend", default="bwrap")
    a = ap.parse_args()
    env = {"PATH": "/usr/bin:/bin", "BACKEND": a.backend}
    env.update({k: v for k, v in os.environ.items()
                if k in ("DOCKER_HOST", "CONTAINER_HOST") or
                k.startswith(("SANDBOX_IMAGE_", "LLM_SANDBOX_"))})
    sandbox = [a.bin, "run", "--language", "python", "--code", "pass"]
    bare = ["/usr/bin/python3", "-c", "pass"]
    for _ in range(5):  # warm the page cache
        timed(sandbox, env), timed(bare, env)
    s, b = [], []
    for _ in range(a.runs):
        s.append(timed(sandbox, env))
        b.append(timed(bare, env))
    ms, mb = statistics.median(s), statistics.median(b)
    print(f"runs: {a.runs} each, backend {a.backend}, uid {os.getuid()}")
    print(f"{'':28} {'median ms':>10} {'p95 ms':>10}")
    print(f"{'/usr/bin/python3 -c pass':28} {mb:10.1f} {p95(b):10.1f}")
    print(f"{'llm-sandbox run (python)':28} {ms:10.1f} {p95(s):10.1f}")
    print(f"overhead (median): {ms - mb:.1f} ms, ratio {ms / mb:.2f}x")


if __name__ == "__main__":
    main()
