#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Inside the Debian 12 guest that scripts/vm-test.sh boots (image:
# tests/vm/build-image.sh): run the bwrap and nsjail integration and
# security suites in four settings and write everything to the results
# share (/vmresults), then power the guest off.
#
#   guest-run.sh root         the root autologin shell (ttyS0): settings a, b,
#                             then lets the user go, waits, powers off
#   guest-run.sh user         the user's autologin shell (ttyS1): c, d
#   guest-run.sh setting X    one setting, in whatever cgroup it was started
#
# Settings: a = root in a system service with Delegate=yes; b = root in its
# plain login shell (session scope); c = the user in
# `systemd-run --user --scope -p Delegate=yes`; d = the user in the plain
# login shell. /vmresults/env (written by the host) names the paths, the
# settings, the suites and the mode (quick or all). Besides the suites:
# doctor's verdict per setting (doctor.json), the shipped systemd units
# started by the real managers (tests/vm/test_units.py, as root and as the
# user), and, at the end, whatever our runs left in the cgroup tree
# (leftovers.txt; it must be empty).
#
# Slowness: under QEMU's software emulation (TCG) a trivial sandbox run
# takes 3-6 s instead of 0.1-0.5 s, an OOM kill 6-19 s, and a run's
# --timeout overruns by up to 5 s (measured on a loaded 2-core host), so
# the tests that bound how promptly something ends would fail whatever
# the cgroups do. The suites get SBX_TEST_SLOWNESS (tests/integration/
# conftest.py: it scales those bounds, and only those): 6 under TCG, 1
# under KVM; SBX_VM_SLOWNESS overrides. Real hardware never sets it.
set -eu
. /vmresults/env

: "${SBX_VM_SRC:?}" "${SBX_VM_BUILD:?}" "${SBX_VM_SETTINGS:?}" "${SBX_VM_SUITES:?}"
SBX_VM_MODE=${SBX_VM_MODE:-quick}
SBX_VM_SUITE_TIMEOUT=${SBX_VM_SUITE_TIMEOUT:-3600}
SBX_VM_USER=${SBX_VM_USER:-tester}
if [ -z "${SBX_VM_SLOWNESS:-}" ]; then
    case ${SBX_VM_ACCEL:-tcg} in kvm) SBX_VM_SLOWNESS=1 ;; *) SBX_VM_SLOWNESS=6 ;; esac
fi
R=/vmresults
BIN=$SBX_VM_BUILD/bin/llm-sandbox
# The host puts a copy of this script in the results share when the run
# starts: editing the source tree during a run cannot change it mid-way.
self=$SBX_VM_SRC/tests/vm/guest-run.sh
if [ -r "$R/guest-run.sh" ]; then
    self=$R/guest-run.sh
    case ${1:-} in
        root|user) [ "$0" = "$self" ] || exec /bin/bash "$self" "$@" ;;
    esac
fi

# Progress, to the results share (the host prints it as it comes) and the
# console (the serial log).
progress() {
    local line
    line="$(date -u +%H:%M:%S) [$(id -un)] $*"
    echo "$line" >>"$R/progress" 2>/dev/null || true
    echo "guest-run: $line"
}

has_setting() { case " $SBX_VM_SETTINGS " in *" $1 "*) return 0 ;; esac; return 1; }

# The cgroup facts of the calling process: what llm-sandbox inherits.
cgroup_facts() {
    local cg d
    cg=$(sed -n 's/^0:://p' /proc/self/cgroup)
    d=/sys/fs/cgroup$cg
    echo "## id"; id
    echo "## /proc/self/cgroup"; cat /proc/self/cgroup
    for dir in "$d" "$(dirname "$d")" /sys/fs/cgroup; do
        echo "## $dir"
        for f in cgroup.type cgroup.controllers cgroup.subtree_control; do
            printf '%-24s %s\n' "$f:" "$(cat "$dir/$f" 2>&1 || true)"
        done
        printf '%-24s %s\n' "owner:" "$(stat -c '%U:%G %a' "$dir" 2>&1)"
        printf '%-24s %s\n' "cgroup.procs owner:" "$(stat -c '%U:%G %a' "$dir/cgroup.procs" 2>&1)"
        printf '%-24s %s\n' "subtree_control owner:" \
            "$(stat -c '%U:%G %a' "$dir/cgroup.subtree_control" 2>&1)"
    done
    echo "## processes in $d"
    for p in $(cat "$d/cgroup.procs" 2>/dev/null); do
        [ -r "/proc/$p/cmdline" ] || continue  # gone (this loop's own subshells)
        printf '%s %s\n' "$p" "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-100)"
    done
    echo "## cgroups under $d"
    find "$d" -mindepth 1 -maxdepth 3 -type d 2>/dev/null | sed "s|^$d|.|" | head -n 50
}

# The quick subset: the tests whose outcome the cgroups decide (issue 20's
# list: a 1 GiB allocation under 128M ends oom, a fork bomb under --pids 32
# is contained, --cpus 0.5 sets cpu.max, a setsid double-fork daemon dies
# at the timeout, the limits seen in the v2 files from outside), where the
# harness finds the groups, and what plugins --json says of the controls.
QUICK_TESTS="mcp_memory_ends_a_1gib_allocation or memory_bomb_gradual or pids_limit"
QUICK_TESTS="$QUICK_TESTS or fork_bomb_is_contained or cpu_quota or limits_seen_from_outside"
QUICK_TESTS="$QUICK_TESTS or timeout_setsid_double_fork_daemon or no_process_survives"
QUICK_TESTS="$QUICK_TESTS or cgroup_check_looks_where_the_groups_are or installed_plugins_report"
# and a zygote's forked run in a group of its own (Python's only: time)
QUICK_TESTS="$QUICK_TESTS or (each_forked_run_has_a_cgroup_of_its_own and python)"

# One suite, as tests/CMakeLists.txt runs it (plus junit xml and -rfE).
run_suite() {
    local setting=$1 suite=$2 out=$R/$1 backend args rc t0 t1 targets
    backend=${suite#*.}
    case $suite in
        integration.bwrap)
            args=(-q -p no:cacheprovider --ignore="$SBX_VM_SRC/tests/integration/test_socket.py") ;;
        integration.nsjail) args=(-q -p no:cacheprovider -m contract) ;;
        security.*) args=(-q -rs -p no:cacheprovider) ;;
        *) progress "unknown suite $suite"; return 1 ;;
    esac
    # The tests that need the package registries cannot pass: the guest
    # has no network (-nic none). Left out, and said so in the summary.
    args+=(--ignore="$SBX_VM_SRC/tests/integration/test_installs.py")
    warm=1
    if [ "$SBX_VM_MODE" = quick ]; then
        warm=0 # no Go or C++ among them: no warm-up (conftest.py)
        # What fits the CI budget (~10 min warm under TCG, see the header
        # of scripts/vm-test.sh): the limits the cgroups enforce.
        case $suite in
            integration.*)
                targets=(tests/integration/test_limits.py tests/integration/test_harness.py
                         tests/integration/test_plugins.py tests/integration/test_zygote.py)
                args+=(-k "$QUICK_TESTS") ;;
            security.*)
                targets=(tests/security/test_posture.py) ;;
        esac
    else
        case $suite in
            integration.*) targets=(tests/integration) ;;
            security.*) targets=(tests/security) ;;
        esac
    fi
    [ -z "${SBX_VM_PYTEST_K:-}" ] || args+=(-k "$SBX_VM_PYTEST_K")
    targets=("${targets[@]/#/$SBX_VM_SRC/}")
    progress "setting $setting: $suite start"
    t0=$(date +%s)
    rc=0
    # SIGINT first: pytest stops as on ^C and still writes its junit xml
    # and summary, so a suite that overruns keeps what it found. The soak
    # runs 50 times, as ctest's security.docker does (1,000 under TCG take
    # most of an hour).
    (cd /tmp && timeout -s INT -k 60 "$SBX_VM_SUITE_TIMEOUT" env \
        SBX_SOAK_RUNS="${SBX_VM_SOAK_RUNS:-50}" SBX_TEST_SLOWNESS="$SBX_VM_SLOWNESS" \
        SBX_TEST_WARM="$warm" \
        SBX_BUILD_DIR="$SBX_VM_BUILD" SBX_SOURCE_DIR="$SBX_VM_SRC" SBX_BIN="$BIN" \
        SBX_AGENT="$SBX_VM_BUILD/libexec/llm-sandbox/sbx-agent" \
        SBX_TEST_PLUGINS="$SBX_VM_BUILD/tests/plugins" SBX_TEST_BACKEND="$backend" \
        PYTHONDONTWRITEBYTECODE=1 \
        /usr/bin/python3 -m pytest "${args[@]}" -rfE --junitxml="$out/$suite.xml" \
        -o junit_family=xunit1 "${targets[@]}") >"$out/$suite.log" 2>&1 || rc=$?
    t1=$(date +%s)
    echo "$rc $((t1 - t0))" >"$out/$suite.rc"
    progress "setting $setting: $suite rc=$rc in $((t1 - t0)) s: $(tail -n 1 "$out/$suite.log")"
}

# The shipped units (tests/vm/test_units.py) under this user's manager:
# results as $1.{xml,log,rc}.
run_units() {
    local base=$1 rc=0 t0
    progress "units as $(id -un): start"
    t0=$(date +%s)
    (cd /tmp && timeout -s INT -k 60 "$SBX_VM_SUITE_TIMEOUT" env SBX_VM_BUILD="$SBX_VM_BUILD" \
        SBX_TEST_SLOWNESS="$SBX_VM_SLOWNESS" PYTHONDONTWRITEBYTECODE=1 \
        /usr/bin/python3 -m pytest -q -p no:cacheprovider -rfE --junitxml="$base.xml" \
        -o junit_family=xunit1 "$SBX_VM_SRC/tests/vm/test_units.py") >"$base.log" 2>&1 || rc=$?
    echo "$rc $(( $(date +%s) - t0 ))" >"$base.rc"
    progress "units as $(id -un): rc=$rc in $(( $(date +%s) - t0 )) s: $(tail -n 1 "$base.log")"
}

# What our runs could leave in the cgroup tree: groups, their parents, the
# leaf a server moves to, the scopes asked of systemd. Once every setting
# and unit has ended, none may remain.
leftovers() {
    find /sys/fs/cgroup -type d \( -name llm-sandbox -o -name supervisor \
        -o -name 'llm-sandbox-*.scope' -o -name llm-sandbox-server \) 2>/dev/null || true
}

# llm-sandbox's own view and a memory limit, run by itself: doctor's cgroup
# lines and a 64M run that allocates 300 MB (a cgroup kills it; the rlimit
# fallback makes the allocation fail inside the program).
MEMPROBE='b = bytearray(300 * 1024 * 1024); print("allocated", len(b))'
probe() {
    echo "### $* -- doctor"
    "$@" "$BIN" doctor 2>&1 | grep -i cgroup || true
    echo "### $* -- run --memory 64M (allocates 300 MB)"
    "$@" "$BIN" run --json --timeout 60 --memory 64M --code "$MEMPROBE" 2>&1 | cut -c1-1500 || true
    echo
    echo "### $* -- run --timeout 1.5 (sleeps 100 s): how far the wall clock overruns"
    "$@" "$BIN" run --json --timeout 1.5 --code 'import time; time.sleep(100)' 2>&1 \
        | grep -o '"status":"[a-z_]*"\|"duration_ms":[0-9]*' | tr '\n' ' ' || true
    echo
    echo "### $* -- cat /proc/self/cgroup"
    "$@" /bin/cat /proc/self/cgroup 2>&1 || true
}

setting() {
    local s=$1 out=$R/$1 t0 suite
    mkdir -p "$out"
    export HOME
    HOME=$(getent passwd "$(id -u)" | cut -d: -f6)
    t0=$(date +%s)
    progress "setting $s starts in $(sed -n 's/^0:://p' /proc/self/cgroup)"
    cgroup_facts >"$out/cgroup-before.txt" 2>&1
    "$BIN" doctor >"$out/doctor.txt" 2>&1 || echo "(doctor exit $?)" >>"$out/doctor.txt"
    "$BIN" doctor --json >"$out/doctor.json" 2>>"$out/doctor.txt" || true
    probe env >"$out/probe.txt" 2>&1
    for suite in $SBX_VM_SUITES; do
        run_suite "$s" "$suite" || true
    done
    cgroup_facts >"$out/cgroup-after.txt" 2>&1
    "$BIN" doctor >"$out/doctor-after.txt" 2>&1 || echo "(doctor exit $?)" >>"$out/doctor-after.txt"
    echo "$(( $(date +%s) - t0 ))" >"$out/seconds"
    progress "setting $s done in $(( $(date +%s) - t0 )) s"
}

# Facts about the guest as a whole, once.
guest_facts() {
    echo "## uname"; uname -a
    echo "## systemd-analyze"; systemd-analyze 2>&1 || true
    echo "## cgroup mounts"; grep cgroup /proc/self/mounts
    echo "## /sys/fs/cgroup/cgroup.subtree_control"; cat /sys/fs/cgroup/cgroup.subtree_control
    echo "## user.slice subtree_control"; cat /sys/fs/cgroup/user.slice/cgroup.subtree_control
    echo "## user@1000.service"
    systemctl show -p Delegate -p DelegateControllers -p ControlGroup "user@1000.service" 2>&1
    echo "## missing libraries of the host-built binaries"
    for f in "$BIN" "$SBX_VM_BUILD"/lib/llm-sandbox/plugins/*.so \
             "$SBX_VM_BUILD/libexec/llm-sandbox/sbx-agent"; do
        ldd "$f" 2>&1 | grep -i "not found" | sed "s|^|$f: |" || true
    done
    echo "(end of list)"
    echo "## tools"
    for t in bwrap nsjail pasta python3 node go javac Rscript ruby g++; do
        printf '%-8s %s\n' "$t" "$(command -v "$t" || echo missing)"
    done
    echo "## sysctls"
    sysctl user.max_user_namespaces kernel.unprivileged_userns_clone 2>&1 || true
}

case ${1:-} in
root)
    # Whatever happens, the guest powers off (the host then reports what
    # it has) instead of leaving the autologin console at a prompt.
    trap 'rc=$?; [ "$rc" -eq 0 ] || progress "guest-run root failed (exit $rc)";
          touch "$R/guest-done"; sync; systemctl poweroff' EXIT
    progress "guest up: $(systemd-analyze 2>/dev/null | head -n 1 || echo 'systemd-analyze n/a')"
    guest_facts >"$R/guest-info.txt" 2>&1
    touch "$R/progress"
    chmod 666 "$R/progress"
    # llm-sandbox as the sole process of a Delegate=yes unit (a service and
    # a scope), for comparison with the settings, where the test harness
    # shares the unit with it.
    {
        probe systemd-run --quiet --wait --pipe --collect -p Delegate=yes
        probe systemd-run --quiet --scope -p Delegate=yes
    } >"$R/probes-root-sole.txt" 2>&1
    # The user's results directories, writable by the user.
    for s in c d user; do
        mkdir -p "$R/$s"
        chown "$SBX_VM_USER:" "$R/$s"
    done
    if has_setting a; then
        progress "setting a: systemd-run -p Delegate=yes (a system service)"
        systemd-run --quiet --wait --collect --unit=sbx-vm-setting-a -p Delegate=yes \
            -p "RuntimeMaxSec=$(( SBX_VM_SUITE_TIMEOUT * 5 ))" -p StandardOutput=journal \
            /bin/bash "$self" setting a || progress "setting a: systemd-run exit $?"
        systemctl show -p Delegate -p DelegateControllers sbx-vm-setting-a.service \
            >"$R/a/unit.txt" 2>&1 || true
    fi
    if has_setting b; then
        /bin/bash "$self" setting b || progress "setting b: exit $?"
    fi
    if [ "${SBX_VM_UNITS:-1}" = 1 ] && { has_setting a || has_setting b; }; then
        run_units "$R/units-root"
    fi
    mkdir -p /run/sbx-vm
    touch /run/sbx-vm/user-go
    if has_setting c || has_setting d; then
        # Bounded by the host's deadline, which kills the whole guest.
        while [ ! -e "$R/user/done" ]; do sleep 2; done
    fi
    leftovers >"$R/leftovers.txt"
    progress "all settings done ($(wc -l <"$R/leftovers.txt") cgroups left); powering off"
    journalctl -b --no-pager -o short-monotonic >"$R/journal.txt" 2>&1 || true
    ;;
user)
    trap 'rc=$?; [ "$rc" -eq 0 ] || progress "guest-run user failed (exit $rc)";
          touch "$R/user/done"' EXIT
    while [ ! -e /run/sbx-vm/user-go ]; do sleep 2; done
    {
        probe systemd-run --user --quiet --wait --pipe --collect -p Delegate=yes
        probe systemd-run --user --quiet --scope -p Delegate=yes
    } >"$R/user/probes-user-sole.txt" 2>&1
    if has_setting c; then
        progress "setting c: systemd-run --user --scope -p Delegate=yes"
        systemd-run --user --scope --quiet -p Delegate=yes /bin/bash "$self" setting c \
            || progress "setting c: systemd-run exit $?"
    fi
    if has_setting d; then
        /bin/bash "$self" setting d || progress "setting d: exit $?"
    fi
    if [ "${SBX_VM_UNITS:-1}" = 1 ] && { has_setting c || has_setting d; }; then
        run_units "$R/user/units"
    fi
    ;;
setting)
    setting "$2"
    ;;
*)
    echo "usage: guest-run.sh root|user|setting X" >&2
    exit 2
    ;;
esac
