#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What a session call costs against a one-shot run, through one MCP
server on stdio (one tools/call per run): the same trivial program per
language as a one-shot execute_code and as a call in an open session, and
the session's overhead over the interpreter doing nothing (an empty cell).
Prints medians and p95 in milliseconds. A benchmark, not a test: timings
on shared machines are noisy.

usage: bench/sessions.py [--runs N] [--bin PATH] [--backend NAME]
                         [--languages python,javascript,ruby,r]
"""
import argparse
import os
import statistics
import sys
import time

from mcpclient import Mcp

CODE = {"python": "print(1)", "javascript": "console.log(1)", "ruby": "puts 1",
        "r": "cat(1, '\\n')", "go": 'package main\nimport "fmt"\nfunc main() { fmt.Println(1) }'}


def p95(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * 0.95))]


def tool(server, name, args):
    t0 = time.perf_counter()
    msg = server.call("tools/call", {"name": name, "arguments": args})
    dt = (time.perf_counter() - t0) * 1000.0
    res = msg["result"]["structuredContent"]
    if res.get("status", "ok") != "ok":
        sys.exit("unexpected result: %r" % res)
    return dt, res

def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--bin", default=os.path.join(here, "..", "build", "bin", "llm-sandbox"))
    ap.add_argument("--backend", default="bwrap")
    ap.add_argument("--languages", default="python,javascript,ruby,r")
    a = ap.parse_args()
    env = {"PATH": "/usr/bin:/bin", "BACKEND": a.backend, "HOME": os.environ.get("HOME", "/tmp")}
    server = Mcp(a.bin, env)
    print(f"runs: {a.runs} each, backend {a.backend}, uid {os.getuid()}; milliseconds")
    print(f"  {'':34} {'median':>8} {'p95':>8}")
    try:
        for lang in a.languages.split(","):
            code = CODE[lang]
            create, res = tool(server, "create_session", {"language": lang})
            sid = res["session_id"]
            rows = {"one-shot": [], "session call": [], "session, empty call": []}
            for _ in range(3):  # warm up both paths
                tool(server, "execute_code", {"language": lang, "code": code})
                tool(server, "execute_code", {"session_id": sid, "code": code})
            for _ in range(a.runs):
                rows["one-shot"].append(tool(server, "execute_code",
                                                    {"language": lang, "code": code})[0])
                rows["session call"].append(tool(server, "execute_code",
                                                        {"session_id": sid, "code": code})[0])
                rows["session, empty call"].append(tool(server, "execute_code",
                                                               {"session_id": sid, "code": ""})[0])
            tool(server, "close_session", {"session_id": sid})
            print(f"{lang} (create_session took {create:.1f})")
            for k, v in rows.items():
                print(f"  {k:34} {statistics.median(v):8.1f} {p95(v):8.1f}")
            print(f"  one-shot / session call (median): "
                  f"{statistics.median(rows['one-shot']) / statistics.median(rows['session call']):.1f}x")
    finally:
        server.close()


if __name__ == "__main__":
    main()
