# SPDX-License-Identifier: MIT
"""A minimal MCP client for the benchmarks: one llm-sandbox server on stdio,
newline-delimited JSON-RPC, one request at a time."""
import json
import subprocess


class Mcp:
    def __init__(self, binary, env):
        self.p = subprocess.Popen([binary], env=env, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.id = 0
        self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def call(self, method, params):
        self.id += 1
        self.send({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params})
        while True:
            msg = json.loads(self.p.stdout.readline())
            if msg.get("id") == self.id:
                return msg

    def close(self):
        self.p.stdin.close()
        self.p.wait()
