#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The MCP protocol tests (tests/mcp/test_protocol.py, test_edges.py)
# against llm-sandbox.exe under wine, less those that
# mcp-protocol-deselect.list names with its reasons. ctest runs this as
# windows.wine.mcp_protocol with SBX_BIN set to the wine wrapper script.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
MCP=$HERE/../mcp
[ -x "${SBX_BIN:-}" ] || { echo "mcp-protocol.sh: SBX_BIN is not an executable" >&2; exit 2; }
set --
while IFS= read -r id; do
    case $id in '' | '#'*) continue ;; esac
    set -- "$@" --deselect "$id"
done <"$HERE/mcp-protocol-deselect.list"
cd "$MCP"
PYTHONDONTWRITEBYTECODE=1 exec python3 -m pytest -q -rs -p no:cacheprovider "$@" \
    test_protocol.py test_edges.py
