#!/bin/sh
# SPDX-License-Identifier: MIT
# check-overrides.sh DEBIAN_DIR: every lintian override in DEBIAN_DIR
# (*.lintian-overrides, source/lintian-overrides) says why, in a comment
# line right above it. Prints each one that does not; exits 1 if any.
set -eu
bad=0
for f in "$1"/*lintian-overrides "$1"/source/lintian-overrides; do
    [ -f "$f" ] || continue
    awk -v f="$f" '
        /^[[:space:]]*#/ { why = 1; next }
        /^[[:space:]]*$/ { why = 0; next }
        { if (!why) { printf "%s:%d: override without a reason: %s\n", f, NR, $0; bad = 1 } }
        END { exit bad }' "$f" || bad=1
done
[ "$bad" -eq 0 ] && echo "check-overrides: every override in $1 says why"
exit "$bad"
