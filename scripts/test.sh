#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Set up and run every test: install dependencies, build with -Werror, run
# the unit, static, fuzz-replay and MCP client tests, the integration and
# security suites as root with Docker's and Podman's and the unprivileged
# ones beside them, the
# kubernetes suites on a real single-node cluster (scripts/k8s-cluster.sh;
# its binaries build in the background when not cached), the cgroup v2
# tests in a Debian 12 systemd guest under QEMU (scripts/vm-test.sh), the
# integration and security paths again under ASan+UBSan (each path once),
# the unit and MCP tests under ASan+UBSan, one run under valgrind, each
# parser's fuzzer briefly, and the Quickstart's set-up and the Debian
# packages in a bare Debian 12 root (scripts/fresh-check.sh, then
# scripts/package-check.sh, beside the steps that count no leftovers).
# This is the README's test command; .ci/run calls it.
#
# SBX_FUZZ_SECONDS (default 20) sets the libFuzzer time per target.
# --setup stops after the set-up that needs no daemon: the dependencies,
# the -Werror build, and the sanitizer and fuzz trees configured (not
# built); scripts/fresh-check.sh runs it in a bare Debian 12.
# At the end (pass or fail) it prints where the time went: each step's wall
# time, whether its cache was warm, and each test's time (scripts/test-times.py).
set -eu
cd "$(dirname "$0")/.."
SRC=$(pwd)
SETUP_ONLY=""
case ${1:-} in
    "") ;;
    --setup) SETUP_ONLY=1 ;;
    *) echo "usage: scripts/test.sh [--setup]" >&2; exit 2 ;;
esac
JOBS=$(nproc)

# Step timing: one TSV line per step (name, seconds, CPU busy, cache,
# JUnit files).
TIMES=$(mktemp -d /tmp/llm-sandbox-times.XXXXXX)
cur="" cur_start=0 cur_cpu="" cur_cache="" cur_junit="" n_junit=0
# The machine's CPU time so far, in clock ticks: "BUSY ALL" (all cores;
# BUSY is what was not idle or waiting for I/O). Two readings give how
# busy the CPUs were between them: a step at 100% can only go faster by
# doing less, one well below it has room for work beside it.
cpu_ticks() {
    read -r _ us ni sy id io hi si st _ </proc/stat
    echo "$((us + ni + sy + hi + si + st)) $((us + ni + sy + id + io + hi + si + st))"
}
# The share of both readings' interval the CPUs were busy, in percent
cpu_busy() {
    # shellcheck disable=SC2086 # two readings of two words each
    set -- $1 $2
    [ "$4" -gt "$2" ] && echo $((100 * ($3 - $1) / ($4 - $2))) || echo 0
}
finish_step() {
    [ -n "$cur" ] || return 0
    printf '%s\t%s\t%s\t%s%s\n' "$cur" $(($(date +%s) - cur_start)) \
        "$(cpu_busy "$cur_cpu" "$(cpu_ticks)")" "$cur_cache" "$cur_junit" >>"$TIMES/steps.tsv"
    cur=""
}
# step NAME [CACHE]: CACHE is warm, cold or - (no cache of its own)
step() {
    finish_step
    cur=$1 cur_cache=${2:--} cur_start=$(date +%s) cur_cpu=$(cpu_ticks) cur_junit=""
    printf '\n==> %s\n' "$1"
}
# A JUnit file, $J, for the next ctest call of this step.
next_junit() {
    n_junit=$((n_junit + 1))
    cur_junit="$cur_junit	junit-$n_junit.xml"
    J="$TIMES/junit-$n_junit.xml"
}
kill_tree() {
    for c in $(pgrep -P "$1" 2>/dev/null); do
        kill_tree "$c"
    done
    kill "$1" 2>/dev/null || true
}
# unnice_tree PID: a niced background build and everything it started back
# to normal priority, once the steps it yielded to are done and the next
# one waits for it (what it starts afterwards inherits that)
unnice_tree() {
    renice -n 0 -p "$1" >/dev/null 2>&1 || true
    for c in $(pgrep -P "$1" 2>/dev/null); do
        unnice_tree "$c"
    done
}
report() {
    rc=$?
    # a failure leaves no background job running
    for p in ${builds:-} ${lane_pid:-} ${daemon_pid:-} ${fresh_pid:-} ${k8s_build:-} \
        ${vm_image:-}; do
        kill_tree "$p"
    done
    finish_step
    /usr/bin/python3 "$SRC/scripts/test-times.py" "$TIMES/steps.tsv" "$TIMES"/junit-*.xml \
        "$TIMES/lane.tsv" "$TIMES/daemons.tsv" || true
    rm -rf "$TIMES"
    exit $rc
}
trap report EXIT

FUZZ="manifest config seccomp_list jsonrpc tool_args b64 wsframe proxy_request agentc k8s_channel
    k8s_kubeconfig wsl2_list wsl2_frame jail_diag"
FUZZ_TARGETS=$(for t in $FUZZ; do printf 'fuzz_%s ' "$t"; done)
# Each parser's fuzzer for SBX_FUZZ_SECONDS, one target per core at a time;
# each prints its final stats when it ends, and its whole log if it failed.
# (As root this runs at the end of the unprivileged lane, beside the root
# suites, at the lowest priority: they take the CPU they need and the
# fuzzers the rest, for the same time. The fuzz tree is built by then.)
fuzz_one() {
    mkdir -p "build-fuzz/corpus-$1"
    nice -n 19 "build-fuzz/tests/fuzz_$1" -max_total_time="${SBX_FUZZ_SECONDS:-20}" \
        -print_final_stats=1 "build-fuzz/corpus-$1" "$SRC/tests/fuzz/corpus/$1" \
        >"$TIMES/fuzz-$1.log" 2>&1
    rc=$?
    printf '%s: ' "$1"
    tail -n 3 "$TIMES/fuzz-$1.log" | tr '\n' ' '
    echo
    [ "$rc" = 0 ] || cat "$TIMES/fuzz-$1.log"
    return $rc
}
run_fuzzers() {
    fuzz_rc=0
    set -- $FUZZ
    while [ $# -gt 0 ]; do
        pids=""
        for _ in $(seq "$JOBS"); do
            [ $# -gt 0 ] || break
            fuzz_one "$1" &
            pids="$pids $!"
            shift
        done
        for p in $pids; do
            wait "$p" || fuzz_rc=1
        done
    done
    return $fuzz_rc
}

step "dependencies"
scripts/install-deps.sh | tee "$TIMES/deps.log"
grep -q "all packages present" "$TIMES/deps.log" && cur_cache=warm || cur_cache=cold

# shellcheck source=scripts/lib/cmake-tree.sh
. "$SRC/scripts/lib/cmake-tree.sh"
# configure DIR ARGS...: cmake for the tree DIR, with cmake_generator's
# choice of generator
configure() {
    local dir=$1
    shift
    # shellcheck disable=SC2046 # "-G Ninja" is two words, or none
    cmake -S . -B "$dir" $(cmake_generator "$dir") "$@" >/dev/null
}

[ -f build/CMakeCache.txt ] && cache=warm || cache=cold
step "build (-Werror)" "$cache"
configure build -DSBX_WERROR=ON
cmake --build build -j "$JOBS"

# The sanitizer and fuzz trees build in the background (niced) while the
# first tests run: compiling is CPU, most tests mostly wait. The fuzz tree
# is clang's, with -Werror like the others (and the agent, which no fuzz
# target holds), so clang's own warnings cannot creep in.
asan_cfg="-DSBX_WERROR=ON -DSBX_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=Debug"
fuzz_cfg="-DSBX_FUZZ=ON -DSBX_WERROR=ON -DCMAKE_BUILD_TYPE=Debug"
[ -f build-asan/CMakeCache.txt ] && asan_cache=warm || asan_cache=cold
if [ -n "$SETUP_ONLY" ]; then
    step "configure the ASan+UBSan and fuzz trees (--setup)" "$asan_cache"
    # shellcheck disable=SC2086
    configure build-asan $asan_cfg
    # shellcheck disable=SC2086
    CC=clang configure build-fuzz $fuzz_cfg
    finish_step
    printf '\n==> set-up done (--setup)\n'
    exit 0
fi
# (Each background job below writes its exit status itself: set -e would
# end its subshell at a failure before it did, and whoever waits for the
# file would wait for ever, or read nothing.)
# shellcheck disable=SC2086
(set +e
    configure build-asan $asan_cfg &&
    nice -n 10 cmake --build build-asan -j "$JOBS" >"$TIMES/build-asan.log" 2>&1 &&
    CC=clang configure build-fuzz $fuzz_cfg &&
    nice -n 10 cmake --build build-fuzz -j "$JOBS" --target $FUZZ_TARGETS sbx-agent \
        >"$TIMES/build-fuzz.log" 2>&1
    echo $? >"$TIMES/builds.rc") &
builds=$!

# The Debian 12 guest's image (tests/vm/build-image.sh: built once and
# cached; cold, about 20 minutes, niced) likewise; when cached it only
# prints its path.
if [ "$(id -u)" -eq 0 ]; then
    vm_t0=$(date +%s)
    (set +e
        tests/vm/build-image.sh >"$TIMES/vm-image.out" 2>"$TIMES/vm-image.log" </dev/null
        echo $? >"$TIMES/vm-image.rc"
        echo $(($(date +%s) - vm_t0)) >"$TIMES/vm-image.secs") &
    vm_image=$!
fi

# The test cluster's binaries (scripts/k8s-cluster.sh: built once from the
# Go module proxy and cached; cold, 20-30 minutes) build beside the suites
# that need no cluster; when cached this finds them at once.
k8s_cache=warm
if [ "$(id -u)" -eq 0 ]; then
    scripts/k8s-cluster.sh build --check || {
        k8s_cache=cold
        (set +e
            nice -n 19 scripts/k8s-cluster.sh build >"$TIMES/k8s-build.log" 2>&1 </dev/null
            echo $? >"$TIMES/k8s-build.rc") &
        k8s_build=$!
    }
fi

step "tests: unit, static, fuzz replay, MCP clients"
next_junit
(cd build && ctest --output-on-failure -j "$JOBS" -LE integration --output-junit "$J")

# Windows (issue 28): the mingw-w64 cross-build of llm-sandbox.exe
# (scripts/build-windows.sh) and its contract tests under wine (ctest label
# windows.wine: the dependencies, command lines, UTF-16, the process layer,
# the real exe's CLI and MCP stdio, and tests/mcp's protocol tests against
# it). The four libraries it needs build from Debian sources once (cold:
# about 3 minutes here, one-time, cached under /var/cache/llm-sandbox/windows);
# warm, this step took 10 s (16 s for a fresh build-windows tree), 9 s of it
# the tests in one wine session (tests/windows/wine-session.sh).
step "windows: mingw-w64 cross-build, contract tests under wine"
scripts/build-windows.sh build-windows >"$TIMES/windows.log" 2>&1 || {
    cat "$TIMES/windows.log"
    echo "test.sh: scripts/build-windows.sh failed (above)" >&2
    exit 1
}
grep -q "dependencies cached" "$TIMES/windows.log" && cur_cache=warm || {
    cur_cache=cold
    grep "dependencies built" "$TIMES/windows.log" || true
}
next_junit
(cd build-windows && ctest --output-on-failure -L windows.wine --output-junit "$J")

# builds_ok: waits for the ASan+UBSan and fuzz trees' background build,
# and says whether it succeeded
builds_ok() {
    while [ ! -f "$TIMES/builds.rc" ]; do
        sleep 5
    done
    [ "$(cat "$TIMES/builds.rc")" = 0 ]
}
# lane_suite TSV LANE NAME COMMAND...: one suite of a lane that runs beside
# a step; its wall time, outcome and CPU share go to TSV for the table,
# and a failure sets rc
lane_suite() {
    l_tsv=$1 l_name=$3 l_t0=$(date +%s) l_cpu=$(cpu_ticks) l_rc=0
    printf '\n==> %s: %s\n' "$2" "$3"
    shift 3
    "$@" || l_rc=1
    [ "$l_rc" = 0 ] || rc=1
    printf '%s\t%s\t%s\t%s\n' "$l_name" $(($(date +%s) - l_t0)) \
        "$([ "$l_rc" = 0 ] && echo ok || echo FAILED)" \
        "$(cpu_busy "$l_cpu" "$(cpu_ticks)")" >>"$l_tsv"
}

# The unprivileged suites (as nobody: no cgroups, no privilege to drop, a
# cache of its own) run beside the root ones. Each kind of user has its own
# session lock (tests/integration/conftest.py says why they do not meet).
unprivileged_lane() {
    rc=0
    # each suite's wall time and outcome, for the table (lane.tsv)
    u() {
        lane_suite "$TIMES/lane.tsv" unprivileged "$@"
    }
    # Each suite once as nobody: those that also run under ASan+UBSan run
    # only there (the same tests, more checks; the plain build's bwrap and
    # nsjail paths run as root in the root step). The ASan tree builds in
    # the background from the start: the lane waits for it, leaving the
    # CPUs to it and to the root suites, and runs those suites first; the
    # root step below runs the other backends' suites under it, whose
    # plugins and core paths as root these do not reach.
    if builds_ok; then
        u "ASan+UBSan: integration (bwrap)" env ASAN_OPTIONS=detect_leaks=1 \
            tests/integration/run-unprivileged.sh build-asan
        u "ASan+UBSan: security (bwrap)" env ASAN_OPTIONS=detect_leaks=1 SBX_TEST_SUITE=security \
            tests/integration/run-unprivileged.sh build-asan
        # nsjail's plugin and the core behind it (the root step keeps the
        # root-only share: tests/integration/nsjail-root-asan.list)
        # (its Go module test starts from this user's warm-up set,
        # SBX_TEST_SEED_WARM below; the bwrap suite above builds one in an
        # empty cache)
        u "ASan+UBSan: integration contract (nsjail)" env ASAN_OPTIONS=detect_leaks=1 \
            SBX_TEST_SEED_WARM=1 SBX_TEST_BACKEND=nsjail \
            tests/integration/run-unprivileged.sh build-asan -m contract
    else
        echo "(not run under ASan+UBSan: that build failed; the root step shows why)"
        rc=1
    fi
    # Then what has no ASan run.
    u "security (nsjail)" env SBX_TEST_SUITE=security SBX_TEST_BACKEND=nsjail \
        tests/integration/run-unprivileged.sh build
    u "integration (mxc: its checks and the CI list of the contract suite)" env \
        SBX_TEST_BACKEND=mxc SBX_TEST_LIST=tests/integration/mxc-ci.list \
        tests/integration/run-unprivileged.sh build -m "contract or mxc"
    # WSL2 (experimental) through its stand-in for wsl.exe over the real
    # bwrap (tests/wsl2/wsl_shim.c, which like wsl.exe passes only fds 0-2,
    # so boxes go through the plugin's opener): as a user, as on Windows;
    # not as root. About 40 s and 5 s here.
    u "integration (wsl2: its checks and the CI list of the contract suite)" env \
        SBX_TEST_BACKEND=wsl2 SBX_TEST_LIST=tests/integration/wsl2-ci.list \
        tests/integration/run-unprivileged.sh build -m "contract or wsl2"
    u "security (wsl2: posture and the syscall matrix)" env SBX_TEST_SUITE=security \
        SBX_TEST_BACKEND=wsl2 SBX_TEST_LIST=tests/security/wsl2-ci.list \
        tests/integration/run-unprivileged.sh build
    # Docker and Podman need a daemon the tests start as root: as nobody
    # every case is reported skipped with that reason (-rs prints it).
    for engine in docker podman; do
        u "security ($engine: skipped as nobody)" env SBX_TEST_SUITE=security \
            SBX_TEST_BACKEND=$engine tests/integration/run-unprivileged.sh build -rs
    done
    # The fuzzers last, in the time the root step still runs (they touch
    # no sandbox, so they cannot meet its sessions).
    if builds_ok; then
        u "libFuzzer (each parser, ${SBX_FUZZ_SECONDS:-20} s)" run_fuzzers
    fi
    return $rc
}

# in_tree DIR COMMAND...: COMMAND run in the build tree DIR
in_tree() {
    (cd "$1" && shift && "$@")
}

# Docker's and Podman's suites as root, in a lane of their own beside the
# root step's: a root session on a daemon the tests start and one on a
# local backend count disjoint things as left behind (DAEMON in
# tests/integration/conftest.py), so each kind has a session lock of its
# own. Podman's suites, Docker's security suite, then Docker's contract
# suite under ASan+UBSan, its only run (not again in the plain build: the
# plain build's docker plugin runs in integration.podman, whose dialect is
# the same plugin's).
daemon_lane() {
    rc=0
    d() {
        lane_suite "$TIMES/daemons.tsv" "root, beside" "$@"
    }
    d integration.podman in_tree build ctest --output-on-failure -R '^integration[.]podman$'
    d security.podman in_tree build ctest --output-on-failure -R '^security[.]podman$'
    d security.docker in_tree build ctest --output-on-failure -R '^security[.]docker$'
    # Its time checks get twice the slack (SBX_TEST_SLOWNESS): it runs
    # under ASan, beside the root step with both CPUs busy, and a timed-out
    # run's container once took 1.2-1.8 s past its timeout to be killed and
    # reported there (four time checks failed at once; alone, they pass).
    if builds_ok; then
        d "ASan+UBSan: integration.docker" in_tree build-asan env ASAN_OPTIONS=detect_leaks=1 \
            SBX_TEST_SLOWNESS=2 ctest --output-on-failure -R '^integration[.]docker$'
    else
        echo "(not run under ASan+UBSan: that build failed; a later step shows why)"
        rc=1
    fi
    return $rc
}

step "root: integration and security (Docker's, Podman's and the unprivileged suites beside)"
lane_pid="" daemon_pid=""
if [ "$(id -u)" -eq 0 ]; then
    (set +e
        unprivileged_lane >"$TIMES/unprivileged.log" 2>&1
        echo $? >"$TIMES/unprivileged.rc") &
    lane_pid=$!
    (set +e
        daemon_lane >"$TIMES/daemons.log" 2>&1
        echo $? >"$TIMES/daemons.rc") &
    daemon_pid=$!
    cur_junit="$cur_junit	daemons.tsv"
fi
root_rc=0
next_junit
# Kubernetes has a step of its own below (one cluster for its suites);
# WSL2 runs as a user, in the lane, but for the cgroup its opener makes
# as root (integration.wsl2_cgroup, a few seconds).
# Docker's and Podman's suites: in the lane beside, as root (as anyone
# else they are skipped here).
# SBX_TEST_SEED_WARM=1: the Go module test's fresh cache starts with links
# to this user's warm-up sets (tests/integration/test_installs.py) instead
# of compiling Go's standard library again; the lane's bwrap suite, under
# ASan+UBSan, builds one in its empty cache.
daemons='^integration[.]docker$'
[ -z "$daemon_pid" ] || daemons='[.](docker|podman)$'
(cd build && SBX_TEST_SEED_WARM=1 ctest --output-on-failure -L integration \
    -E "kubernetes|[.]wsl2\$|$daemons" --output-junit "$J") ||
    root_rc=$?
if [ -n "$daemon_pid" ]; then
    wait "$daemon_pid" || true
    cat "$TIMES/daemons.log"
    [ "$(cat "$TIMES/daemons.rc")" = 0 ] || root_rc=1
fi

if [ "$(id -u)" -eq 0 ]; then
    step "kubernetes: a real single-node cluster, its suites, down" "$k8s_cache"
    if [ -n "${k8s_build:-}" ]; then
        # (cold: the suites beside it are done, and the VM image's build,
        # if any, is the only other work left)
        unnice_tree "$k8s_build"
        wait "$k8s_build" || true
        [ "$(cat "$TIMES/k8s-build.rc")" = 0 ] || {
            cat "$TIMES/k8s-build.log"
            echo "test.sh: building the test cluster's binaries failed (above)" >&2
            exit 1
        }
    fi
    # Up once for the suites (each would otherwise bring it up and down);
    # the last one restarts it without its NetworkPolicy enforcer.
    scripts/k8s-cluster.sh up >/dev/null
    next_junit
    (cd build && ctest --output-on-failure -R kubernetes --output-junit "$J") || root_rc=$?
    scripts/k8s-cluster.sh down >/dev/null 2>&1 || true

    # The hosts users have (cgroup v2 under systemd), in a real Debian 12
    # guest under QEMU: as root in a service with Delegate=yes and in a
    # login shell, as a user in a delegated scope and in a login shell,
    # the tests the cgroups decide; the shipped units; nothing left.
    step "VM: Debian 12 with systemd and cgroup v2 under QEMU (scripts/vm-test.sh --quick)"
    unnice_tree "$vm_image"
    wait "$vm_image" || true
    [ "$(cat "$TIMES/vm-image.rc")" = 0 ] || {
        cat "$TIMES/vm-image.log"
        echo "test.sh: building the VM's image failed (above)" >&2
        exit 1
    }
    [ "$(cat "$TIMES/vm-image.secs")" -lt 10 ] && cur_cache=warm || cur_cache=cold
    scripts/vm-test.sh --quick --suites integration.bwrap --build-dir build || root_rc=$?
fi

step "build with ASan+UBSan, and the fuzzers (began in the background)" "$asan_cache"
wait "$builds" || true
if [ "$(cat "$TIMES/builds.rc" 2>/dev/null)" != 0 ]; then
    cat "$TIMES/build-asan.log" "$TIMES/build-fuzz.log" 2>/dev/null
    echo "test.sh: the ASan+UBSan or the fuzz build failed (above)" >&2
    exit 1
fi

step "root, ASan+UBSan: integration and security"
# Each code path once under ASan, not each suite: integration.bwrap and
# security.bwrap (as nobody, in the unprivileged lane) cover the core
# (hostile input included); integration.nsjail (the contract suite) its
# plugin and, in its root-only share, the core's paths as root (cgroups,
# the uid range, dropping privilege);
# integration.socket the unix-socket transport; integration.docker (in the
# daemon lane beside the root step, as root) and integration.mxc their
# plugins. Not again under ASan: integration.podman
# (the docker plugin's code, whose Podman dialect is the translator's,
# which unit.test_docker_translate runs under ASan below) and
# security.nsjail, security.docker, security.podman (their plugin code is
# the integration suites'; their attacks meet the same core paths as
# security.bwrap's).
# The kubernetes plugin's code runs under ASan through its unit tests
# (translator, exec channel, kubeconfig) and fuzzers, not on the cluster.
# (Run by an ordinary user there is no lane: bwrap's suites run here.)
# With the lane, nsjail's contract suite runs under ASan there, as nobody,
# and here only its root-only share (tests/integration/nsjail-root-asan.list:
# cgroups, the uid range, dropping privilege).
asan_skip='integration[.]podman|security[.](nsjail|docker|podman)|.*kubernetes.*|.*wsl2'
[ -z "$lane_pid" ] || asan_skip="integration[.](bwrap|nsjail)|security[.]bwrap|$asan_skip"
[ -z "$daemon_pid" ] || asan_skip="integration[.]docker|$asan_skip"
next_junit
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -L integration \
    -E "^($asan_skip)\$" --output-junit "$J") ||
    root_rc=1
if [ -n "$lane_pid" ]; then
    printf '\n==> root, ASan+UBSan: nsjail, the root-only share of its contract suite\n'
    (cd build-asan && env SBX_BUILD_DIR="$PWD" SBX_SOURCE_DIR="$SRC" \
        SBX_BIN="$PWD/bin/llm-sandbox" SBX_AGENT="$PWD/libexec/llm-sandbox/sbx-agent" \
        SBX_TEST_PLUGINS="$PWD/tests/plugins" SBX_TEST_BACKEND=nsjail ASAN_OPTIONS=detect_leaks=1 \
        python3 -m pytest -q -p no:cacheprovider -m contract \
        $(grep -v '^#' "$SRC/tests/integration/nsjail-root-asan.list" | sed "s|^|$SRC/|")) ||
        root_rc=1
fi

if [ -n "$lane_pid" ]; then
    step "unprivileged lane: what was left (its suites ran beside)"
    cur_junit="$cur_junit	lane.tsv"
    wait "$lane_pid" || true
    cat "$TIMES/unprivileged.log"
    [ "$(cat "$TIMES/unprivileged.rc")" = 0 ] || root_rc=1
fi
[ "$root_rc" = 0 ] || {
    echo "test.sh: an integration or security suite, or a fuzzer, failed (above)" >&2
    exit 1
}

# The newcomer's path (scripts/fresh-check.sh: the Quickstart's set-up in
# a bare Debian 12 root, as root and as a user with sudo) runs beside the
# steps below, which count no leftovers: its servers and sandboxes, in
# another pid namespace on this host, would look like leftovers to an
# integration session.
fresh_pid=""
if [ -n "${SBX_IN_FRESH_ROOT:-}" ]; then
    # scripts/fresh-check.sh --full runs this in its root, holding the lock
    # both checks take: this run is the newcomer's path already
    printf '\n==> fresh Debian 12 and the .debs: left out (this run is in fresh-check --full'"'"'s root)\n'
elif [ "$(id -u)" -eq 0 ]; then
    # then the Debian packages (scripts/package-check.sh: built, linted,
    # installed into a bare Debian 12 root and used); the two share the
    # bare root and one lock, so they run one after the other
    (set +e
        scripts/fresh-check.sh >"$TIMES/fresh.log" 2>&1
        echo $? >"$TIMES/fresh.rc"
        scripts/package-check.sh >"$TIMES/package.log" 2>&1; echo $? >"$TIMES/package.rc") &
    fresh_pid=$!
fi

step "valgrind: one real run"
valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
    --track-fds=yes build/bin/llm-sandbox run --code 'print(6*7)' >/dev/null

step "ASan+UBSan: unit, static, fuzz replay, MCP clients"
next_junit
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j "$JOBS" -LE integration \
    --output-junit "$J")

if [ -z "$lane_pid" ]; then
    step "libFuzzer"
    run_fuzzers || {
        echo "test.sh: a fuzzer failed (its whole log is above)" >&2
        exit 1
    }
fi

if [ -n "$fresh_pid" ]; then
    step "fresh Debian 12: the Quickstart's set-up, then the .debs (what was left of them)"
    wait "$fresh_pid" || true
    tail -n 40 "$TIMES/fresh.log"
    [ "$(cat "$TIMES/fresh.rc")" = 0 ] || {
        echo "test.sh: scripts/fresh-check.sh failed (its log: /var/cache/llm-sandbox/fresh/logs/)" >&2
        exit 1
    }
    tail -n 40 "$TIMES/package.log"
    [ "$(cat "$TIMES/package.rc" 2>/dev/null)" = 0 ] || {
        echo "test.sh: scripts/package-check.sh failed (above)" >&2
        exit 1
    }
fi

finish_step
printf '\n==> all tests passed\n'

