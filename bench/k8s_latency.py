#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Latency of execute_code through MCP on the kubernetes backend, against
the test cluster of scripts/k8s-cluster.sh (started if it is not running,
and left as it was found):

  cold        a fresh `llm-sandbox` MCP server on stdio, from its start to
              its first call's result (the plugin's probe, with or without
              a remembered proof of NetworkPolicy enforcement, then a pod)
  pod each    later calls of one server without ready sandboxes
              (LLM_SANDBOX_POOL=0): a pod started for every call
  warm        later calls with the core's pool (the default), paced so a
              ready pod waits for each call

print(6*7) in python; medians, minimum and maximum in milliseconds.

usage: bench/k8s_latency.py [--runs N] [--bin PATH] [--pace S]
A benchmark, not a test. Root (the cluster is the machine's).
"""
import argparse
import fcntl
import glob
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import cluster  # noqa: E402
from mcpclient import Mcp  # noqa: E402

CODE = {"code": "print(6*7)", "language": "python"}


def env(pool, extra=None):
    e = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8",
         "BACKEND": "kubernetes"}
    e.update(cluster.client_env())
    if pool is not None:
        e["LLM_SANDBOX_POOL"] = pool
    e.update(extra or {})
    return e


def call(m):
    t0 = time.perf_counter()
    r = m.call("tools/call", {"name": "execute_code", "arguments": CODE})
    ms = (time.perf_counter() - t0) * 1000
    out = r["result"]["structuredContent"]
    assert out["status"] == "ok" and out["stdout"] == "42\n", out
    return ms


def show(name, xs):
    print("%-12s n=%-3d median %6.0f ms   min %6.0f   max %6.0f" % (
        name, len(xs), statistics.median(xs), min(xs), max(xs)), flush=True)


def forget_proof():
    for f in glob.glob(os.path.expanduser("~/.cache/llm-sandbox/kubernetes-netpol-*")):
        os.unlink(f)


def take_lock():
    """The tests' machine-wide lock (flock on /tmp): the cluster is shared."""
    fd = os.open("/tmp", os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print("waiting for the machine-wide lock (flock /tmp): a test suite is running",
              file=sys.stderr, flush=True)
        fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def main():
    ap = argparse.ArgumentParser(description="kubernetes latency through MCP")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin", "llm-sandbox"))
    ap.add_argument("--pace", type=float, default=4.0, help="seconds between warm calls")
    a = ap.parse_args()
    take_lock()
    cluster.start(ROOT)
    try:
        cold, cold_proof = [], []
        for i in range(3):
            forget_proof()
            t0 = time.perf_counter()  # the server's start (its probe) counts
            m = Mcp(a.bin, env("0"))
            call(m)
            cold.append((time.perf_counter() - t0) * 1000)
            m.close()
            t0 = time.perf_counter()
            m = Mcp(a.bin, env("0"))  # the proof is remembered now
            call(m)
            cold_proof.append((time.perf_counter() - t0) * 1000)
            m.close()
        show("cold", cold)
        show("cold, proof", cold_proof)
        m = Mcp(a.bin, env("0"))
        call(m)
        show("pod each", [call(m) for _ in range(a.runs)])
        m.close()
        m = Mcp(a.bin, env(None))
        call(m)
        warm = []
        for _ in range(a.runs):
            time.sleep(a.pace)
            warm.append(call(m))
        show("warm", warm)
        m.close()
    finally:
        cluster.stop(ROOT)


if __name__ == "__main__":
    main()
