#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Warm one-shot latency of print(1) through MCP (issue 22's "p50 <= 5 ms
and <= 0.5x a bare python3 -c pass"), back to back and paced: a harness
sends calls back to back, an agent one now and then, and the two differ
where the kernel's cost depends on how recently it last paid it.

For each backend: runs forked from a zygote with cgroups off (the rlimit
fallbacks) and on (each run's child is moved into a group of its own
before the run comes: one cgroup migration), and runs on a ready sandbox (zygote
off), each back to back and with a pause between calls. As root on a
cgroup v1 host it also times the migration itself: a sleeping process
moved between two groups of the pids hierarchy, back to back and paced.
Client-side round trips of tools/call; p50, p90 and p99 of each series.

A benchmark, not a test. It takes the machine-wide lock the tests use
(flock on /tmp), as bench/run does.

usage: bench/latency.py [--backend B ...] [--runs N] [--pause S] [--bin PATH]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import cpu  # noqa: E402


def quantiles(xs):
    xs = sorted(x * 1000 for x in xs)
    return tuple(xs[int(q * (len(xs) - 1))] for q in (0.5, 0.9, 0.99))


def fmt(q):
    return "p50 %.1f, p90 %.1f, p99 %.1f ms" % q


def series(b, backend, env, want, runs, pause, logdir):
    """(round trips of the calls that ran where `want` says (the result's
    "sandbox"), how many did not) of `runs` calls after 10 unmeasured ones,
    `pause` seconds apart; an error string when a call fails."""
    srv = b.Server("ours", [b.ARGS.bin], b.ours_env(backend, env),
                   logdir + "/latency-%s.log" % backend)
    args = {"language": "python", "code": b.CODE["python"]}
    out, other = [], 0
    try:
        for _ in range(10):
            srv.tool("execute_code", args)
        for _ in range(runs):
            time.sleep(pause)
            ok, ms, err, res = srv.tool("execute_code", args)
            if not ok:
                return "a call failed: %s" % err
            if res.get("sandbox") == want:
                out.append(ms / 1000.0)
            else:
                other += 1
    finally:
        srv.close()
    return out, other


def migrations(runs, pause):
    """Seconds per write of a pid to cgroup.procs (cgroup v1's pids
    hierarchy, root), alternating between two groups; None where that
    hierarchy is not ours to use."""
    base = "/sys/fs/cgroup/pids"
    if os.geteuid() != 0 or not os.path.isfile(os.path.join(base, "cgroup.procs")):
        return None
    groups = [tempfile.mkdtemp(prefix="llm-sandbox-bench-", dir=base) for _ in range(2)]
    p = subprocess.Popen(["/bin/sleep", "600"])
    out = []
    try:
        for i in range(runs):
            time.sleep(pause)
            t = time.perf_counter()
            with open(os.path.join(groups[i % 2], "cgroup.procs"), "w") as f:
                f.write(str(p.pid))
            out.append(time.perf_counter() - t)
    finally:
        p.kill()
        p.wait()
        for g in groups:
            for _ in range(50):  # a killed task leaves its group a moment later
                try:
                    os.rmdir(g)
                    break
                except OSError:
                    time.sleep(0.02)
    return out


def main():
    ap = argparse.ArgumentParser(description="warm one-shot latency (issue 22)")
    ap.add_argument("--backend", action="append")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--pause", type=float, default=0.05, help="seconds between paced calls")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin", "llm-sandbox"))
    ap.add_argument("--no-lock", action="store_true", help="the caller holds flock /tmp")
    a = ap.parse_args()
    b, lock, logdir = cpu.bench_start(a)
    bare = []
    for _ in range(a.runs):
        t = time.perf_counter()
        subprocess.run(["/usr/bin/python3", "-c", "pass"], env={}, check=True)
        bare.append(time.perf_counter() - t)
    print("bare /usr/bin/python3 -c pass: %s" % fmt(quantiles(bare)))
    kinds = [("zygote, cgroups off", {"LLM_SANDBOX_ZYGOTE": "true", "LLM_SANDBOX_CGROUP": "off"},
              "zygote")]
    if os.geteuid() == 0:
        kinds.append(("zygote, cgroups", {"LLM_SANDBOX_ZYGOTE": "true",
                                          "LLM_SANDBOX_CGROUP": "auto"}, "zygote"))
    kinds.append(("ready sandbox", {"LLM_SANDBOX_ZYGOTE": "false"}, "ready"))
    for backend in a.backend or cpu.ZYGOTE_BACKENDS:
        for name, env, want in kinds:
            for label, pause in (("back to back", 0.0), ("%g s apart" % a.pause, a.pause)):
                r = series(b, backend, env, want, a.runs, pause, logdir)
                if isinstance(r, str):
                    print("%s, python (%s), %s: n/a (%s)" % (backend, name, label, r))
                elif not r[0]:
                    print("%s, python (%s), %s: n/a (no call ran on a %s sandbox)" % (
                        backend, name, label, want))
                else:
                    print("%s, python (%s), %s: %s%s" % (
                        backend, name, label, fmt(quantiles(r[0])),
                        " (%d of %d calls ran elsewhere, left out)" % (r[1], a.runs)
                        if r[1] else ""))
    for label, pause in (("back to back", 0.0), ("%g s apart" % a.pause, a.pause)):
        r = migrations(a.runs, pause)
        if r is not None:
            print("cgroup v1 migration (a pid written to cgroup.procs), %s: %s" % (
                label, fmt(quantiles(r))))
    print("load average: %.2f %.2f %.2f" % os.getloadavg())
    if lock is not None:
        os.close(lock)
    return 0


if __name__ == "__main__":
    sys.exit(main())
