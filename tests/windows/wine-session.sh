#!/bin/sh
# SPDX-License-Identifier: MIT
#
# One wine session for the windows.wine tests (ctest fixture wine_session):
#   wine-session.sh start WINE  -- a wineserver for $WINEPREFIX that stays
#       up to 60 s after its last client, and wine's own services started
#       once, all with their standard streams on /dev/null;
#   wine-session.sh stop        -- ends that wineserver and every wine
#       process of $WINEPREFIX (only the tests' prefix: the caller sets it).
# Why: wine starts its wineserver and services with the first program of a
# session, and they inherit that program's stdout and stderr; a test that
# reads a program's output to its end would then wait for them too (about
# 2.5 s a program here). Started here, no test's pipe reaches them.
set -eu
[ -n "${WINEPREFIX:-}" ] || { echo "wine-session.sh: WINEPREFIX is not set" >&2; exit 2; }
case ${1:-} in
start)
    wine=${2:?usage: wine-session.sh start WINE}
    # a new prefix: wineserver cannot start in a directory that does not
    # exist yet (wine fills an empty one on its first program)
    mkdir -p "$WINEPREFIX"
    # a wineserver of the prefix already up (an earlier run's, lingering)
    # is ended first: this one must be started here, away from any pipe
    if ! wineserver -p 60 </dev/null >/dev/null 2>&1; then
        wineserver -k </dev/null >/dev/null 2>&1 || true
        wineserver -w </dev/null >/dev/null 2>&1 || true
        wineserver -p 60 </dev/null >/dev/null 2>&1
    fi
    # any program starts the services; cmd's exit is the cheapest
    "$wine" cmd /c exit </dev/null >/dev/null 2>&1
    echo "wine-session.sh: wineserver and services up for $WINEPREFIX"
    ;;
stop)
    wineserver -k </dev/null >/dev/null 2>&1 || true
    wineserver -w </dev/null >/dev/null 2>&1 || true
    echo "wine-session.sh: ended the wine session of $WINEPREFIX"
    ;;
*)
    echo "usage: wine-session.sh start WINE | stop" >&2
    exit 2
    ;;
esac
