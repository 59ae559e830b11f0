#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The one-shot rows of bench/run for Docker alone (ours, no reference):
print(1) per language, cold (LLM_SANDBOX_POOL=0) and warm (default), on
bench/run's private dockerd, with bench/run's own series() (best median of
3 repetitions of --runs calls after 2 warm-up calls; 15 is --quick's size).
For re-measuring those rows after a change to the Docker path without the
whole 8-minute run. Takes the machine-wide lock as bench/run does.

--paced S also measures warm calls S seconds apart, so that every call
finds a ready sandbox: the warm path's own cost, apart from how fast the
pool refills under back-to-back calls.

usage: bench/oneshot.py [--runs N] [--bin PATH] [--lang L ...] [--paced S]
A benchmark, not a test.
"""
import argparse
import importlib.machinery
import importlib.util
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)


def load_bench():
    loader = importlib.machinery.SourceFileLoader("bench_run", os.path.join(HERE, "run"))
    spec = importlib.util.spec_from_loader("bench_run", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def main():
    ap = argparse.ArgumentParser(description="bench/run's Docker one-shot rows")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin", "llm-sandbox"))
    ap.add_argument("--lang", action="append")
    ap.add_argument("--paced", type=float, default=0.0)
    ap.add_argument("--no-lock", action="store_true", help="the caller holds flock /tmp")
    a = ap.parse_args()
    a.bin = os.path.abspath(a.bin)
    b = load_bench()
    langs = a.lang or ["python"]
    lock = b.take_lock(a)
    logdir = tempfile.mkdtemp(prefix="llm-sandbox-bench-logs-", dir="/var/tmp")
    with b.refenv.Dockerd(b.log) as d:
        d.ensure_test_image(ROOT)
        cold = b.Server("ours", [a.bin], b.ours_env("docker", {"LLM_SANDBOX_POOL": "0"}),
                        logdir + "/ours-docker-cold.log")
        warm = b.Server("ours", [a.bin], b.ours_env("docker"), logdir + "/ours-docker.log")
        for lang in langs:
            args = {"language": lang, "code": b.CODE[lang]}
            for name, srv in (("cold", cold), ("warm", warm)):
                s = b.series(srv, args, a.runs, 2)
                if isinstance(s, b.NA):
                    print("docker %s %s: n/a (%s)" % (lang, name, s.error))
                else:
                    print("docker %s %s: p50 %.1f ms, p95 %.1f ms" % (lang, name, s.p50, s.p95))
            if a.paced > 0:
                xs = []
                for _ in range(a.runs):
                    time.sleep(a.paced)
                    ok, dt, err, _ = warm.tool("execute_code", args)
                    if not ok:
                        sys.exit("bench: %s" % err)
                    xs.append(dt)
                print("docker %s warm, %.1f s apart: p50 %.1f ms, p95 %.1f ms" % (
                    lang, a.paced, statistics.median(xs), b.p95(xs)))
        cold.close()
        warm.close()
    if lock is not None:
        os.close(lock)
    print("server logs: %s" % logdir)


if __name__ == "__main__":
    main()
