# SPDX-License-Identifier: MIT
"""A minimal MCP client for the benchmarks: one MCP server on stdio,
newline-delimited JSON-RPC, one request at a time (call) or a fixed number
in flight (call_window). Any stdio MCP server works: `binary` is a path or
an argv list, so bench/run drives the reference implementation with it too."""
import json
import subprocess
import time


class Mcp:
    def __init__(self, binary, env, stderr=subprocess.DEVNULL):
        argv = [binary] if isinstance(binary, str) else list(binary)
        self.p = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=stderr)
        self.id = 0
        self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def _read(self):
        line = self.p.stdout.readline()
        if not line:
            raise EOFError("the MCP server closed its stdout (exit status %s)" % self.p.poll())
        return json.loads(line)

    def call(self, method, params):
        self.id += 1
        self.send({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params})
        while True:
            msg = self._read()
            if msg.get("id") == self.id:
                return msg

    def call_window(self, method, params, count, window):
        """Send `count` identical requests keeping `window` of them in
        flight; returns the answers and the elapsed seconds."""
        pending, answers, sent = set(), [], 0
        t0 = time.perf_counter()
        while len(answers) < count:
            while sent < count and len(pending) < window:
                self.id += 1
                pending.add(self.id)
                self.send({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params})
                sent += 1
            msg = self._read()
            if msg.get("id") in pending:
                pending.discard(msg["id"])
                answers.append(msg)
        return answers, time.perf_counter() - t0

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
