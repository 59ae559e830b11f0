#!/bin/sh
# SPDX-License-Identifier: MIT
#
# check-banned.sh [ROOT]: STYLE I3 (banned functions) and D1 (no `//`
# comments) for the C sources and headers under core/, plugins/, langs/ and
# examples/.
# Prints FILE:LINE: what, for every hit, and exits 1 if there was any.
#
# Each file is read by a small awk lexer that drops comments and the
# contents of string and character literals (keeping line numbers), so
# "http://x" or a comment that names sprintf() is not a hit. A call is an
# identifier as a whole word followed by '(' (snprintf( is not sprintf(,
# fdopendir( is not dirname(, _exit( is not exit(), and not a struct
# member (ops->signal( is not signal().
#
# Banned everywhere: sprintf vsprintf strcpy strcat gets strtok atoi atol
# system popen dup basename dirname alloca signal. getenv and secure_getenv
# only in core/src/policy/settings.c; exit only in core/cli/main.c and
# core/agent/agent.c (the exec helper's child uses _exit).

set -u

root=${1:-$(dirname "$0")/..}
cd "$root" || exit 2

files=$(find core plugins langs examples -type f \( -name '*.c' -o -name '*.h' \) 2>/dev/null | LC_ALL=C sort)
if [ -z "$files" ]; then
    echo "check-banned: no C files under $(pwd)/{core,plugins,langs}" >&2
    exit 2
fi

# shellcheck disable=SC2086 # file names are plain words in this tree
LC_ALL=C awk '
BEGIN {
    n = split("sprintf vsprintf strcpy strcat gets strtok atoi atol system popen dup " \
              "basename dirname alloca signal getenv secure_getenv exit", banned, " ")
    allowed["getenv"] = "core/src/policy/settings.c"
    allowed["secure_getenv"] = "core/src/policy/settings.c"
    allowed["exit"] = "core/cli/main.c core/agent/agent.c"
    hits = 0
}

FNR == 1 { in_comment = 0 }

function report(msg) {
    printf "%s:%d: %s\n", FILENAME, FNR, msg
    hits++
}

# The line without comments and literal contents; reports // comments.
function strip(line,    out, i, c, d, len, q) {
    out = ""
    len = length(line)
    for (i = 1; i <= len; i++) {
        c = substr(line, i, 1)
        d = substr(line, i + 1, 1)
        if (in_comment) {
            if (c == "*" && d == "/") {
                in_comment = 0
                i++
            }
            continue
        }
        if (c == "/" && d == "*") {
            in_comment = 1
            out = out " "
            i++
            continue
        }
        if (c == "/" && d == "/") {
            report("// comment (STYLE D1: use /* */)")
            break
        }
        if (c == "\"" || c == "\047") {
            q = c
            out = out q
            for (i++; i <= len; i++) {
                c = substr(line, i, 1)
                if (c == "\\") {
                    i++
                    continue
                }
                if (c == q)
                    break
            }
            out = out q
            continue
        }
        out = out c
    }
    return out
}

# Is the word ending before position pos a struct member (after . or ->)?
function member(code, pos,    before) {
    before = substr(code, 1, pos - 1)
    sub(/[ \t]+$/, "", before)
    return before ~ /(\.|->)$/
}

function allowed_here(name,    list, k, m, files) {
    if (!(name in allowed))
        return 0
    m = split(allowed[name], files, " ")
    for (k = 1; k <= m; k++) {
        if (FILENAME == files[k])
            return 1
    }
    return 0
}

{
    code = strip($0)
    for (b = 1; b <= n; b++) {
        name = banned[b]
        rest = code
        while (match(rest, "(^|[^A-Za-z0-9_])" name "[ \t]*\\(")) {
            start = RSTART + (substr(rest, RSTART, length(name)) == name ? 0 : 1)
            if (!member(rest, start) && !allowed_here(name)) {
                report("banned call " name "() (STYLE I3" \
                       (name in allowed ? "; allowed only in " allowed[name] : "") ")")
                break
            }
            rest = substr(rest, RSTART + RLENGTH)
        }
    }
}

END { exit hits > 0 }
' $files
status=$?
if [ "$status" -ne 0 ]; then
    echo "check-banned: banned calls or // comments found (STYLE I3, D1)" >&2
    exit 1
fi
exit 0
