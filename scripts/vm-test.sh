#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Run the bwrap and nsjail integration and security suites on a real
# Debian 12 systemd host with the unified cgroup v2 hierarchy: a QEMU guest
# (tests/vm/build-image.sh builds and caches it), in four settings:
#   a  root, inside a system service with Delegate=yes
#   b  root, from a plain login shell (a session scope)
#   c  an ordinary user (uid 1000) in systemd-run --user --scope -p Delegate=yes
#   d  that user from a plain login shell
# The project is built on the host (the guest has the same Debian 12
# libraries) into a build directory of its own, shared read-only with the
# guest together with the source tree (9p, at the same paths); results come
# back through a third, writable share. The guest has no network.
#
#   scripts/vm-test.sh [--quick | --all] [--settings a,b,c,d]
#                      [--suites integration.bwrap,integration.nsjail,security.bwrap,security.nsjail]
#                      [-k EXPR] [--deadline SECONDS] [--suite-timeout SECONDS]
#                      [--no-units] [--build-dir DIR] [--results DIR]
#
# --quick (the default) runs, in integration.bwrap and integration.nsjail,
# the tests that the cgroups decide (tests/vm/guest-run.sh lists them:
# issue 20's memory, pids, cpu.max and timeout-daemon cases, the limits
# read from outside, where the harness finds the groups, a zygote's run in
# a group of its own); --all runs the
# four suites whole, as tests/CMakeLists.txt does, less
# tests/integration/test_installs.py (it needs the registries; the guest
# has no network). Either way the guest also counts, as tests: doctor's
# cgroups check per setting (it must say ok), the shipped systemd units
# started for real as root and as the user (tests/vm/test_units.py;
# --no-units skips them), and whatever our runs left in the cgroup tree
# once everything ended (it must be nothing). Bounds on how promptly a run
# ends are scaled in the guest under TCG (guest-run.sh says by how much).
#
# Times measured under TCG on a 2-core host that other work loaded to a
# load average of 11-21: cold image build 21 min; boot to the first test
# 100-220 s; `--quick --suites integration.bwrap` 12 min in all, `--quick`
# 19.5 min; `--all` takes hours (a trivial sandbox run takes 3-6 s here).
# Results: BUILD_DIR/vm-results (summary.txt, leftovers.txt,
# units-root.*, user/units.*, per setting a..d: doctor.txt, doctor.json,
# probe.txt, cgroup-before/after.txt, SUITE.log/.xml/.rc).
# Exits 0 only when every selected suite ran and nothing failed; the last
# line is "N passed, N failed, N skipped". Needs root (the image build, 9p
# as any guest uid). SBX_VM_ACCEL=kvm|tcg skips the KVM probe.
set -eu -o pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
mode=quick
settings="a b c d"
suites=""
pytest_k=""
deadline=""
suite_timeout=""
units=1
build=$src/build-vm
results=""

say() { printf 'vm-test: %s\n' "$*"; }
die() { say "$*" >&2; exit 2; }

while [ $# -gt 0 ]; do
    case $1 in
        --quick) mode=quick ;;
        --all) mode=all ;;
        --settings) settings=$(echo "$2" | tr ',' ' '); shift ;;
        --suites) suites=$(echo "$2" | tr ',' ' '); shift ;;
        -k) pytest_k=$2; shift ;;
        --deadline) deadline=$2; shift ;;
        --suite-timeout) suite_timeout=$2; shift ;;
        --no-units) units=0 ;;
        --build-dir) build=$2; shift ;;
        --results) results=$2; shift ;;
        -h|--help) sed -n '3,/^set -eu/p' "$0" | sed -n 's/^# \{0,1\}//p'; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
    shift
done
if [ -z "$suites" ]; then
    suites="integration.bwrap integration.nsjail"
    [ "$mode" = quick ] || suites="$suites security.bwrap security.nsjail"
fi
for s in $settings; do
    case $s in a|b|c|d) ;; *) die "unknown setting $s (a, b, c, d)" ;; esac
done
for s in $suites; do
    case $s in
        integration.bwrap|integration.nsjail|security.bwrap|security.nsjail) ;;
        *) die "unknown suite $s" ;;
    esac
done
n_settings=$(echo $settings | wc -w)
# Per suite inside the guest, and for the whole guest (boot + every run).
if [ -z "$suite_timeout" ]; then
    if [ "$mode" = quick ]; then suite_timeout=900; else suite_timeout=3600; fi
fi
[ -n "$deadline" ] || deadline=$(( 300 + n_settings * $(echo $suites | wc -w) * suite_timeout ))

[ "$(id -u)" -eq 0 ] || die "must run as root (the image build; 9p shares for every guest uid)"
# QEMU from Debian, installed when missing (as k8s-cluster.sh installs what
# the cluster needs): the test command must run on a fresh machine.
if ! command -v qemu-system-x86_64 >/dev/null 2>&1 || ! command -v qemu-img >/dev/null 2>&1; then
    say "installing with apt: qemu-system-x86 qemu-utils"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        qemu-system-x86 qemu-utils >&2 || {
        apt-get update >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
            qemu-system-x86 qemu-utils >&2
    } || die "QEMU is missing and apt could not install it (qemu-system-x86 qemu-utils)"
fi
t_start=$(date +%s)

# 1. The guest image (cached; built once).
say "image: tests/vm/build-image.sh"
t0=$(date +%s)
image=$("$src/tests/vm/build-image.sh" | tail -n 1)
[ -f "$image/disk.img" ] || die "no image at '$image'"
say "image: $image ($(( $(date +%s) - t0 )) s)"

# 2. The project, built on the host into its own directory.
say "build: $build"
t0=$(date +%s)
# shellcheck source=scripts/lib/cmake-tree.sh
. "$src/scripts/lib/cmake-tree.sh"
# shellcheck disable=SC2046 # test.sh passes build/, which may have another generator
nice -n 19 ionice -c3 cmake -S "$src" -B "$build" $(cmake_generator "$build") -DSBX_WERROR=ON \
    >/dev/null
nice -n 19 ionice -c3 cmake --build "$build" -j "$(nproc)" >"$build/vm-build.log" 2>&1 \
    || { tail -n 30 "$build/vm-build.log"; die "build failed"; }
[ -x "$build/bin/llm-sandbox" ] || die "no $build/bin/llm-sandbox after the build"
build=$(cd "$build" && pwd)
say "build: $(( $(date +%s) - t0 )) s"

# 3. The run directory: the results share and the guest's disk overlay
#    (the cached image itself is never written).
results=${results:-$build/vm-results}
rm -rf "$results"
mkdir -p "$results"
chmod 755 "$results"
results=$(cd "$results" && pwd)
run=$(mktemp -d /var/tmp/sbx-vm-host.XXXXXX)
qpid=""
cleanup() {
    if [ -n "$qpid" ] && kill -0 "$qpid" 2>/dev/null; then
        kill "$qpid" 2>/dev/null || true
        sleep 2
        kill -9 "$qpid" 2>/dev/null || true
    fi
    rm -rf "$run"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
qemu-img create -q -f qcow2 -b "$image/disk.img" -F raw "$run/overlay.qcow2"

# The build directory is shared on its own when it is outside the source
# tree; inside it, the source share carries it.
build_share=""
case $build/ in
    "$src"/*) ;;
    *) build_share=$build ;;
esac
cp "$src/tests/vm/guest-run.sh" "$results/guest-run.sh"
cat >"$results/env" <<EOF
SBX_VM_SRC='$src'
SBX_VM_BUILD='$build'
SBX_VM_BUILD_SHARE='$build_share'
SBX_VM_SETTINGS='$settings'
SBX_VM_SUITES='$suites'
SBX_VM_MODE='$mode'
SBX_VM_SUITE_TIMEOUT='$suite_timeout'
SBX_VM_PYTEST_K='$pytest_k'
SBX_VM_USER=tester
SBX_VM_SLOWNESS='${SBX_VM_SLOWNESS:-}'
SBX_VM_UNITS='$units'
EOF

# 4. KVM when it really works (on some hosts /dev/kvm exists and QEMU
#    aborts with "failed to set MSR"): boot the guest's kernel for up to
#    15 s with no root and look for its banner. Else TCG.
accel=${SBX_VM_ACCEL:-}
if [ -z "$accel" ]; then
    accel=tcg
    if [ -w /dev/kvm ]; then
        { timeout 15 qemu-system-x86_64 -accel kvm -cpu host -m 512 -nodefaults -display none \
            -no-reboot -kernel "$image/vmlinuz" -append 'console=ttyS0 panic=-1' \
            -serial "file:$run/kvm-probe.log" >"$run/kvm-probe.err" 2>&1 || true; } 2>/dev/null
        if grep -q "Linux version" "$run/kvm-probe.log" 2>/dev/null; then
            accel=kvm
        else
            say "KVM unusable here: $(head -c 200 "$run/kvm-probe.err" | tr '\n' ' ')"
        fi
    fi
fi
case $accel in
    kvm) accel_args=(-accel kvm -cpu host) ;;
    tcg) accel_args=(-accel tcg,thread=multi -cpu max)
         say "TCG (emulation): sandbox timeouts overrun by up to ~2 s; runs are slow" ;;
    *) die "SBX_VM_ACCEL must be kvm or tcg" ;;
esac
# the guest scales the tests' promptness bounds by it (tests/vm/guest-run.sh)
echo "SBX_VM_ACCEL='$accel'" >>"$results/env"

# 5. Boot, follow the guest's progress, and stop it at the deadline.
share() { echo "local,path=$1,mount_tag=$2,security_model=none,id=$2${3:+,$3}"; }
qemu=(qemu-system-x86_64 "${accel_args[@]}" -smp "$(nproc)" -m 4096
    -kernel "$image/vmlinuz" -initrd "$image/initrd.img"
    -append 'root=/dev/vda rw console=ttyS0 systemd.unified_cgroup_hierarchy=1 panic=-1 quiet'
    -drive "file=$run/overlay.qcow2,format=qcow2,if=virtio,cache=unsafe"
    -virtfs "$(share "$results" results)"
    -virtfs "$(share "$src" src readonly=on)"
    -nic none -display none -monitor none -no-reboot
    -serial "file:$results/serial0.log" -serial "file:$results/serial1.log")
[ -z "$build_share" ] || qemu+=(-virtfs "$(share "$build_share" build readonly=on)")
say "boot ($accel, $mode, settings: $settings; suites: $suites; deadline ${deadline} s)"
t_boot=$(date +%s)
nice -n 10 "${qemu[@]}" >"$results/qemu.log" 2>&1 &
qpid=$!
seen=0
booted=""
outcome=timeout
while :; do
    now=$(date +%s)
    if [ -f "$results/progress" ]; then
        if [ -z "$booted" ]; then
            booted=$(( now - t_boot ))
            say "guest up after ~${booted} s"
        fi
        n=$(wc -l <"$results/progress")
        if [ "$n" -gt "$seen" ]; then
            sed -n "$((seen + 1)),${n}p" "$results/progress" | sed 's/^/  guest: /'
            seen=$n
        fi
    fi
    if ! kill -0 "$qpid" 2>/dev/null; then
        wait "$qpid" || true
        qpid=""
        if [ -f "$results/guest-done" ]; then outcome=done; else outcome=died; fi
        break
    fi
    if [ $(( now - t_boot )) -ge "$deadline" ]; then
        break
    fi
    sleep 5
done
t_end=$(date +%s)
case $outcome in
    done) say "guest powered off after $(( t_end - t_boot )) s" ;;
    *)
        if [ "$outcome" = timeout ]; then
            say "DEADLINE: the guest did not finish in $deadline s; killing QEMU"
            cleanup_pid=$qpid; qpid=""
            kill "$cleanup_pid" 2>/dev/null || true
            sleep 2
            kill -9 "$cleanup_pid" 2>/dev/null || true
        else
            say "QEMU exited before the guest finished (after $(( t_end - t_boot )) s)"
        fi
        [ ! -s "$results/qemu.log" ] || { say "qemu.log:"; tail -n 10 "$results/qemu.log"; }
        [ ! -f "$results/hook-failed" ] || say "guest hook failed: $(cat "$results/hook-failed")"
        say "last of serial0.log (root console):"
        tail -n 25 "$results/serial0.log" 2>/dev/null | tr -d '\r' | sed 's/^/  /'
        say "last of serial1.log (user console):"
        tail -n 10 "$results/serial1.log" 2>/dev/null | tr -d '\r' | sed 's/^/  /'
        for f in "$results"/?/*.log; do
            [ -f "$f" ] && [ ! -f "${f%.log}.rc" ] || continue
            say "unfinished ${f#"$results"/} (pytest progress so far):"
            tail -c 400 "$f" | tr -d '\r' | sed 's/^/  /'
            echo
        done
        ;;
esac

# 6. What ran, what failed (with the assertion line), and the closing count.
say "results in $results"
/usr/bin/python3 - "$results" "$settings" "$suites" "${booted:-?}" \
    "$(( t_end - t_start ))" "$units" <<'PY'
import json, os, sys, xml.etree.ElementTree as ET

res, settings, suites, booted, wall, units = sys.argv[1:7]
settings, suites = settings.split(), suites.split()
names = {"a": "root, system service, Delegate=yes", "b": "root, login shell",
         "c": "user, systemd-run --user --scope -p Delegate=yes", "d": "user, login shell"}
tot = {"passed": 0, "failed": 0, "skipped": 0}
missing = []
lines = []


def junit(label, base):
    """Count one pytest run (base.xml, base.rc) into tot; its lines."""
    xmlp, rcp = base + ".xml", base + ".rc"
    rc, secs = (open(rcp).read().split() + ["?", "?"])[:2] if os.path.exists(rcp) else ("?", "?")
    if not os.path.exists(xmlp):
        missing.append(os.path.relpath(base, res))
        return ["  %-20s did not run or wrote no results (rc %s)" % (label, rc)]
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    fails = []
    for tc in ET.parse(xmlp).getroot().iter("testcase"):
        tid = "%s::%s" % (tc.get("file") or tc.get("classname"), tc.get("name"))
        bad = tc.find("failure")
        if bad is None:
            bad = tc.find("error")
        if bad is not None:
            counts["failed"] += 1
            msg = " | ".join(l.strip() for l in (bad.get("message") or bad.tag).splitlines())
            fails.append("      FAIL %s: %s" % (tid, msg[:400]))
        elif tc.find("skipped") is not None:
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
    if rc not in ("0", "1", "5"):
        counts["failed"] += 1
        fails.append("      FAIL the suite itself: exit %s (timeout 124/137, "
                     "pytest usage or internal error 2-4)" % rc)
    for k in tot:
        tot[k] += counts[k]
    return ["  %-20s %3d passed, %3d failed, %3d skipped  (%s s, exit %s)"
            % (label, counts["passed"], counts["failed"], counts["skipped"], secs, rc)] + fails


def verdict(label, ok, why):
    """One check of the guest's own (not pytest's), counted as a test."""
    tot["passed" if ok else "failed"] += 1
    return ["  %-20s %s%s" % (label, "ok" if ok else "FAIL", "" if ok else ": " + why)]


for s in settings:
    secs = ""
    p = os.path.join(res, s, "seconds")
    if os.path.exists(p):
        secs = " in %s s" % open(p).read().strip()
    lines.append("setting %s (%s)%s" % (s, names[s], secs))
    doc = os.path.join(res, s, "doctor.json")
    try:
        rep = json.load(open(doc))
        check = [c for c in rep["checks"] if c["check"] == "cgroups"][0]
        lines.append("    doctor: [%s] %s" % (check["status"], check["detail"]))
        if check.get("fix"):
            lines.append("    doctor fix: %s" % check["fix"])
        lines += verdict("doctor cgroups", check["status"] == "ok", check["detail"])
    except (OSError, ValueError, KeyError, IndexError) as e:
        lines += verdict("doctor cgroups", False, "no doctor --json (%s)" % e)
    for suite in suites:
        lines += junit(suite, os.path.join(res, s, suite))
for who, base, of in (("root", "units-root", "ab"), ("user", os.path.join("user", "units"), "cd")):
    if units == "1" and set(of) & set(settings):
        lines.append("shipped units (tests/vm/test_units.py) as %s" % who)
        lines += junit("units", os.path.join(res, base))
left = os.path.join(res, "leftovers.txt")
if os.path.exists(left):
    found = [l.strip() for l in open(left) if l.strip()]
    lines.append("the cgroup tree once every setting ended")
    lines += verdict("nothing left", not found, ", ".join(found[:10]))
summary = "\n".join(lines)
summary += "\nboot: guest's first progress line ~%s s after QEMU started; wall %s s" % (booted, wall)
if missing:
    summary += "\nmissing (counted as failed): " + ", ".join(missing)
    tot["failed"] += len(missing)
summary += "\n%d passed, %d failed, %d skipped" % (tot["passed"], tot["failed"], tot["skipped"])
open(os.path.join(res, "summary.txt"), "w").write(summary + "\n")
print(summary)
sys.exit(0 if tot["failed"] == 0 else 1)
PY
