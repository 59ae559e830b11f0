#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The MCP conformance suite (npm @modelcontextprotocol/conformance, pinned
# in package-lock.json) against `llm-sandbox serve --http` with the
# test-only fixtures the scenarios call by name. Every scenario runs; the
# only failures allowed are those listed, with reasons, in
# conformance-expected-failures.yml (the suite fails on a listed scenario
# that passes, too).
#
#   tests/mcp/conformance.sh [LLM_SANDBOX_BINARY]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-${SBX_BIN:-$here/../../build/bin/llm-sandbox}}
nm=$here/node_modules
[ -x "$nm/.bin/conformance" ] || sh "$here/setup.sh" >/dev/null
PATH=$nm/node/bin:$PATH
export PATH

log=$(mktemp)
work=$(mktemp -d)
"$bin" serve --http 127.0.0.1:0 --test-fixtures 2>"$log" &
pid=$!
# (the server exits 143 on SIGTERM, which set -e must not take for the
# script's own failure)
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true; rm -rf "$log" "$work"' EXIT

url=
for _ in $(seq 1 100); do
    url=$(sed -n 's|.*MCP over HTTP at \(http://[^ ]*\)$|\1|p' "$log")
    [ -n "$url" ] && break
    kill -0 $pid 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.1
done
[ -n "$url" ] || { echo "conformance: the server did not start" >&2; cat "$log" >&2; exit 1; }
# the suite's DNS-rebinding scenario needs a localhost URL
url=$(echo "$url" | sed 's|//127.0.0.1:|//localhost:|')
cd "$work"
rc=0
"$nm/.bin/conformance" server --url "$url" --suite all \
    --expected-failures "$here/conformance-expected-failures.yml" >"$work/out" 2>&1 || rc=$?
grep -E "✓|✗|Total|xpected|stale|rror" "$work/out" || cat "$work/out"
exit $rc
