#!/bin/sh
# SPDX-License-Identifier: MIT
# STYLE F1: clang-format decides. Fails listing every C file that
# clang-format (14, Debian 12) would change; `clang-format -i FILE` fixes it.
set -eu
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check-format: clang-format not installed" >&2; exit 1; }
bad=0
# (tests/mcp/node_modules holds npm packages' C headers: not ours)
for f in $(find core plugins langs tests bench examples -name node_modules -prune -o -name '*.[ch]' -print |
        sort); do
    if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
        echo "check-format: $f needs clang-format"
        bad=1
    fi
done
exit $bad
