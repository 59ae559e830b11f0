# SPDX-License-Identifier: MIT
"""A minimal MCP client for scripts/package-check.sh, run inside the root
the packages were installed into: starts `llm-sandbox` (the MCP server on
stdio), initializes, and
  tools       prints the tools tools/list names; fails unless execute_code,
              get_supported_languages and get_language_details are there
  languages   prints get_supported_languages' answer, one per line
"""
import json
import subprocess
import sys


def main():
    what = sys.argv[1]
    req = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "package-check", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    if what == "tools":
        req.append({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    else:
        req.append({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "get_supported_languages", "arguments": {}}})
    # end of input after the requests: the server answers them, then exits
    p = subprocess.run(["llm-sandbox"], input="".join(json.dumps(r) + "\n" for r in req),
                       capture_output=True, text=True, timeout=120)
    answers = {m.get("id"): m for m in map(json.loads, p.stdout.splitlines()) if "id" in m}
    if 2 not in answers or "result" not in answers[2]:
        sys.exit("no answer to request 2 (exit %d): %s %s" % (p.returncode, p.stdout, p.stderr))
    result = answers[2]["result"]
    if what == "tools":
        names = [t["name"] for t in result["tools"]]
        print("tools/list:", " ".join(names))
        missing = {"execute_code", "get_supported_languages", "get_language_details"} - set(names)
        if missing:
            sys.exit("tools/list lacks %s" % sorted(missing))
    else:
        for lang in result["structuredContent"]["languages"]:
            print(lang)


if __name__ == "__main__":
    main()
