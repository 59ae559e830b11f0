#!/bin/sh
# SPDX-License-Identifier: MIT
#
# session_no_server.sh LLM_SANDBOX: `llm-sandbox session` with no server
# on the socket fails with exit code 125 and a message that names the
# socket and says how to start a server; nothing on stdout. No sandbox,
# no server and no file made: a front-end check, hence in the unit label.
set -u

bin=$1
sock=/nonexistent/llm-sandbox-unit-$$/none.sock
fail() { echo "session_no_server: $*" >&2; exit 1; }

check() { # what, then the command and its arguments
    what=$1
    shift
    out=$("$@" 2>/dev/null)
    rc=$?
    err=$("$@" 2>&1 >/dev/null)
    [ "$rc" -eq 125 ] || fail "$what: exit code $rc, not 125 ($err)"
    [ -z "$out" ] || fail "$what: printed on stdout: $out"
    case $err in *"cannot connect"*) ;; *) fail "$what: no 'cannot connect': $err" ;; esac
    case $err in *"'$sock'"*) ;; *) fail "$what: the socket is not named: $err" ;; esac
    case $err in
        *"llm-sandbox serve --socket"*) ;;
        *) fail "$what: no hint to start a server: $err" ;;
    esac
}

check "--socket" "$bin" session list --socket "$sock"
check "exec" "$bin" session exec abc -c 'print(1)' --socket "$sock"
check "LLM_SANDBOX_SOCKET" env LLM_SANDBOX_SOCKET="$sock" "$bin" session create -l python
exit 0
