#!/bin/sh
# SPDX-License-Identifier: MIT
#
# check-headers.sh COMPILER SRCDIR: every header compiles on its own
# (STYLE H3). Each of core/src/**/*.h, core/agent/*.h, plugins/*/*.h and
# core/include/llm-sandbox/*.h is included by an otherwise empty
# translation unit and compiled with -std=c17 -Wall -Wextra -Wpedantic
# -Werror -D_GNU_SOURCE; then included twice, which needs an include guard.
# Prints every header that fails, with the compiler's words, and exits 1 if
# any did. Changes nothing.

set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 COMPILER SRCDIR" >&2
    exit 2
fi
cc=$1
src=$2

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-headers.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

# Compile $tmp/tu.c for header $1 (suffix $2 in the report); print the
# failure and return 1 if it fails. The header's own directory comes first,
# so a plugin's header is not mistaken for a core one of the same name.
compile() {
    dir=$(dirname "$1")
    if ! "$cc" -std=c17 -Wall -Wextra -Wpedantic -Werror -D_GNU_SOURCE -fsyntax-only \
            -I"$dir" -I"$src/core/include" -I"$src/core/src" -I"$src/core/agent" -I"$src/plugins/common" -I"$src/langs/common" \
            -I/usr/include/json-c -c "$tmp/tu.c" >"$tmp/out" 2>&1; then
        echo "FAIL: ${1#"$src"/}$2"
        sed 's/^/    /' "$tmp/out"
        return 1
    fi
    return 0
}

failed=0
checked=0
for h in "$src"/core/src/*.h "$src"/core/src/*/*.h "$src"/core/agent/*.h "$src"/plugins/*/*.h "$src"/langs/*/*.h \
        "$src"/core/include/llm-sandbox/*.h; do
    [ -f "$h" ] || continue
    checked=$((checked + 1))
    name=$(basename "$h")
    # The typedef keeps a header that expands to nothing from tripping
    # -Wpedantic's "empty translation unit" instead of its own problem.
    printf '#include "%s"\ntypedef int check_headers_tu;\n' "$name" >"$tmp/tu.c"
    if ! compile "$h" ""; then
        failed=$((failed + 1))
        continue
    fi
    printf '#include "%s"\n#include "%s"\ntypedef int check_headers_tu;\n' "$name" "$name" \
        >"$tmp/tu.c"
    if ! compile "$h" " (included twice: no include guard?)"; then
        failed=$((failed + 1))
    fi
done

if [ "$checked" -eq 0 ]; then
    echo "check-headers: no headers found under $src" >&2
    exit 2
fi
if [ "$failed" -ne 0 ]; then
    echo "check-headers: $failed of $checked headers do not compile on their own"
    exit 1
fi
echo "check-headers: $checked headers compile on their own"
exit 0
