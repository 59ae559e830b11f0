#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Set up and run every test: install dependencies, build with -Werror, run
# the unit, static, fuzz-replay and integration tests, run the integration
# tests again as an unprivileged user, repeat under ASan+UBSan, check one
# run under valgrind, and fuzz each parser briefly with libFuzzer.
# This is the README's test command; .ci/run calls it.
#
# SBX_FUZZ_SECONDS (default 20) sets the libFuzzer time per target.
set -eu
cd "$(dirname "$0")/.."
SRC=$(pwd)
JOBS=$(nproc)

step() { printf '\n==> %s\n' "$*"; }

step "dependencies"
scripts/install-deps.sh

step "build (-Werror)"
cmake -S . -B build -G Ninja -DSBX_WERROR=ON >/dev/null
cmake --build build -j "$JOBS"

step "tests"
(cd build && ctest --output-on-failure -j "$JOBS" -LE integration)
(cd build && ctest --output-on-failure -L integration)

if [ "$(id -u)" -eq 0 ]; then
    step "integration tests as an unprivileged user"
    tests/integration/run-unprivileged.sh build
    SBX_TEST_BACKEND=nsjail tests/integration/run-unprivileged.sh build -m contract
    step "security suite as an unprivileged user"
    SBX_TEST_SUITE=security tests/integration/run-unprivileged.sh build
    SBX_TEST_SUITE=security SBX_TEST_BACKEND=nsjail tests/integration/run-unprivileged.sh build
    # Docker and Podman need a daemon the tests start as root: as nobody
    # every case is reported skipped with that reason (-rs prints it).
    for engine in docker podman; do
        SBX_TEST_SUITE=security SBX_TEST_BACKEND=$engine tests/integration/run-unprivileged.sh \
            build -rs
    done
fi

step "valgrind: one real run"
valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
    --track-fds=yes build/bin/llm-sandbox run --code 'print(6*7)' >/dev/null

step "build with ASan+UBSan"
cmake -S . -B build-asan -G Ninja -DSBX_WERROR=ON -DSBX_SANITIZE=address,undefined \
    -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-asan -j "$JOBS"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j "$JOBS" -LE integration)
# The container security suites once (above): under ASan the plugin is
# exercised by integration.docker and integration.podman.
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -L integration \
    -E '^security[.](docker|podman)$')

step "libFuzzer"
CC=clang cmake -S . -B build-fuzz -G Ninja -DSBX_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-fuzz -j "$JOBS" --target fuzz_manifest fuzz_config fuzz_seccomp_list \
    fuzz_jsonrpc fuzz_tool_args fuzz_b64 fuzz_wsframe
for t in manifest config seccomp_list jsonrpc tool_args b64 wsframe; do
    mkdir -p "build-fuzz/corpus-$t"
    "build-fuzz/tests/fuzz_$t" -max_total_time="${SBX_FUZZ_SECONDS:-20}" -print_final_stats=1 \
        "build-fuzz/corpus-$t" "$SRC/tests/fuzz/corpus/$t" 2>&1 | tail -n 3
done

step "all tests passed"
