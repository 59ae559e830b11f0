#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Run the integration tests again as an unprivileged user (nobody, 65534),
# with no capabilities and no supplementary groups, where the rlimit
# fallbacks and the refusals show.
#
#   tests/integration/run-unprivileged.sh [BUILD_DIR] [pytest arguments...]
#
# SBX_TEST_SUITE=security runs tests/security (which uses this directory's
# harness) instead of tests/integration. SBX_TEST_LIST names a file of
# pytest node ids (relative to the source tree, one a line, # comments) to
# run instead of the whole suite (e.g. tests/integration/mxc-ci.list).
#
# BUILD_DIR defaults to $SBX_BUILD_DIR, then the source tree's build/; the
# binary is BUILD_DIR/bin/llm-sandbox unless SBX_BIN says otherwise (and no
# BUILD_DIR is given). Must be started as root
# (setpriv needs it); an unprivileged caller just runs the tests as itself.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
suite=${SBX_TEST_SUITE:-integration}
case $suite in
    integration|security) ;;
    *) echo "run-unprivileged.sh: SBX_TEST_SUITE must be integration or security" >&2; exit 2 ;;
esac

build=${SBX_BUILD_DIR:-$src/build}
bin=${SBX_BIN:-}
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
    build=$1    # an explicit build directory wins over the environment
    bin=
    shift
fi
build=$(cd "$build" && pwd)
bin=${bin:-$build/bin/llm-sandbox}
case $bin in
    /*) ;;
    *) bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin") ;;
esac
if [ ! -x "$bin" ]; then
    echo "run-unprivileged.sh: $bin is not an executable (build first)" >&2
    exit 2
fi

listed=
if [ -n "${SBX_TEST_LIST:-}" ]; then
    listed=$(grep -v '^#' "$SBX_TEST_LIST")
fi
# The node ids to run, beneath the tree at $1: the list's, or the suite.
targets() {
    if [ -n "$listed" ]; then
        for t in $listed; do echo "$1/$t"; done
    else
        echo "$1/tests/$suite"
    fi
}

set -- /usr/bin/python3 -m pytest -q -p no:cacheprovider "$@"
if [ "$(id -u)" -ne 0 ]; then
    cd "$src"
    # shellcheck disable=SC2046 # node ids have no blanks
    set -- "$@" --rootdir="$src" $(targets "$src")
    exec env HOME="${HOME:-/tmp}" SBX_BIN="$bin" SBX_BUILD_DIR="$build" SBX_SOURCE_DIR="$src" \
        SBX_TEST_BACKEND="${SBX_TEST_BACKEND:-bwrap}" \
        PYTHONDONTWRITEBYTECODE=1 "$@"
fi

# mxc: the executor is fetched (and cached) as root, where the cache is
# writable; nobody runs it from there.
if [ "${SBX_TEST_BACKEND:-}" = mxc ] && [ -z "${LLM_SANDBOX_MXC_EXECUTOR:-}" ]; then
    LLM_SANDBOX_MXC_EXECUTOR=$(sh "$src/scripts/mxc-executor.sh" | tail -n 1)
fi
# The unprivileged user must be able to read the binary, its plugins and the
# tests. A checkout under a private directory (e.g. /root) is not readable:
# then run a copy (the binary finds its plugins relative to itself).
as_nobody() {
    setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$@"
}
if ! as_nobody test -x "$bin" -a -r "$src/tests/$suite/conftest.py" 2>/dev/null; then
    # in /var/tmp, not /tmp: a root session running beside this one counts
    # new /tmp entries that look like ours as its own leftovers
    stage=$(mktemp -d /var/tmp/sbx-unpriv.XXXXXX)
    trap 'rm -rf "$stage"' EXIT
    chmod 755 "$stage"
    bindir=$(dirname "$bin")
    prefix=$(dirname "$bindir")
    mkdir -p "$stage/build" "$stage/tests"
    cp -a "$prefix/bin" "$prefix/lib" "$prefix/libexec" "$stage/build/"
    if [ -d "$prefix/tests/abi/plugins" ]; then # the old-ABI fixtures (test_abi_compat.py)
        mkdir -p "$stage/build/tests/abi"
        cp -a "$prefix/tests/abi/plugins" "$stage/build/tests/abi/"
    fi
    if [ -x "$prefix/tests/wsl-shim" ]; then # wsl.exe's stand-in (SBX_TEST_BACKEND=wsl2)
        mkdir -p "$stage/build/tests"
        cp -a "$prefix/tests/wsl-shim" "$stage/build/tests/"
    fi
    # the source tree the tests read (their helpers in tests/k8s and
    # tests/mcp, scripts/, the golden files, the seccomp policy), without
    # the build trees, git, or the MCP clients' node_modules
    (cd "$src" && tar -cf - --exclude=./.git --exclude='./build*' --exclude=./Testing \
        --exclude=node_modules .) | tar -xf - -C "$stage"
    chmod -R a+rX "$stage"
    bin=$stage/build/bin/$(basename "$bin")
    build=$stage/build
    src=$stage
    here=$stage/tests/integration
fi
# A logged-in user has a private /run/user/UID (systemd-logind); nsjail
# builds its mount tree there, and would fall back to /tmp without it.
install -d -m 0700 -o 65534 -g 65534 /run/user/65534
# nobody's home (its own is /nonexistent): where llm-sandbox keeps its cache
# (dependency sets, the Go build cache), kept between runs like a user's.
home=/var/tmp/llm-sandbox-test-home-65534
install -d -m 0700 -o 65534 -g 65534 "$home"
cd "$src"
# USER and LOGNAME too: pytest names its base temporary directory after
# them (/tmp/pytest-of-USER), and a root's login shell has USER=root,
# whose directory the root suites own
as_nobody env HOME="$home" USER=nobody LOGNAME=nobody SBX_BIN="$bin" SBX_BUILD_DIR="$build" SBX_SOURCE_DIR="$src" \
    SBX_TEST_BACKEND="${SBX_TEST_BACKEND:-bwrap}" \
    ${LLM_SANDBOX_NSJAIL_PATH:+LLM_SANDBOX_NSJAIL_PATH="$LLM_SANDBOX_NSJAIL_PATH"} \
    ${LLM_SANDBOX_MXC_EXECUTOR:+LLM_SANDBOX_MXC_EXECUTOR="$LLM_SANDBOX_MXC_EXECUTOR"} \
    ${SBX_TEST_SEED_WARM:+SBX_TEST_SEED_WARM="$SBX_TEST_SEED_WARM"} \
    PYTHONDONTWRITEBYTECODE=1 "$@" --rootdir="$src" $(targets "$src")
