#!/bin/sh
# SPDX-License-Identifier: MIT
#
# verify-units.sh SYSTEMD_ANALYZE UNITDIR: the systemd units of
# dist/systemd (the build's copy, whose ExecStart= exists) pass
# `systemd-analyze verify` without a word (it exits 0 on unknown keys and
# bad values, and only says so), and the services keep what issue 20 asks:
# Delegate=yes and OOMPolicy=continue. A copy with a misspelt key must be
# caught, so the check is shown to bite.
set -eu

sa=$1
dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

verify() {
    out=$("$sa" verify --man=no "$@" 2>&1) || { echo "$out"; return 1; }
    [ -z "$out" ] || { echo "$out"; return 1; }
}

if ! verify "$dir"/llm-sandbox.service "$dir"/llm-sandbox.socket "$dir"/llm-sandbox-socket.service; then
    echo "verify-units: systemd-analyze verify complained (above)"
    fail=1
fi
for u in llm-sandbox.service llm-sandbox-socket.service; do
    for line in Delegate=yes OOMPolicy=continue; do
        grep -qx "$line" "$dir/$u" || { echo "verify-units: $u lacks $line"; fail=1; }
    done
done
grep -q '^ExecStart=.*/llm-sandbox serve --socket$' "$dir/llm-sandbox-socket.service" \
    || { echo "verify-units: llm-sandbox-socket.service does not run serve --socket"; fail=1; }

sed 's/^Delegate=yes$/Delegat=yes/' "$dir/llm-sandbox.service" >"$tmp/llm-sandbox.service"
if verify "$tmp/llm-sandbox.service" >/dev/null; then
    echo "verify-units: a misspelt key went unnoticed: the check cannot fail"
    fail=1
fi
[ "$fail" -eq 0 ] && echo "verify-units: ok"
exit "$fail"
