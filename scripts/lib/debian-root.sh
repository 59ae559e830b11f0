# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# debian-root.sh: bare Debian 12 roots for the checks that need a machine
# with nothing installed (scripts/fresh-check.sh, scripts/package-check.sh).
# Sourced, not run. The sourcing script defines say() and die() and may set
# LLM_SANDBOX_CACHE; everything here needs root, debootstrap (once),
# overlayfs, unshare and pivot_root.
#
#  - bare_root: a debootstrap --variant=minbase root with git, sudo and
#    ca-certificates and Debian's own apt sources (no package lists), built
#    once and kept, never written to again, under $FRESH/roots/ named after
#    the hash of its recipe ($BARE).
#  - layers PASSDIR LOWER NAME: a writable overlay layer PASSDIR/NAME over
#    LOWER (colon-separated, topmost first), recorded in PASSDIR/layers.
#  - root_files ROOTDIR: what every scratch root needs from the host, in a
#    mounted overlay (never the bare root): resolv.conf, hosts, a
#    policy-rc.d that holds back daemons, dpkg's unsafe-io, and the host's
#    extra CA certificates (TLS to the registries is re-signed here).
#  - enter PASSDIR WHO BINDS CMD...: run CMD in the root as WHO (root or a
#    user), in a new mount and PID namespace after pivot_root (not chroot:
#    the kernel refuses user namespaces to a chrooted process, and bwrap
#    would set no_new_privs, which stops sudo), with a clean environment.
#  - start_run DIR NAME: one run of a check at a time (DIR/lock), its scratch
#    directory WORK (removed at exit unless KEEP) and LOGS (DIR/logs).
#  - step PASS NAME WHAT CMD: one timed, logged step of a check in its root
#    (PASS_DIR, PASS_WHO, PASS_BINDS, PASS_LOG, in STEP_DIR there); the
#    steps' wall times collect in SUMMARY, the first failure in FAILED.

TOP=${LLM_SANDBOX_CACHE:-/var/cache/llm-sandbox}
FRESH=$TOP/fresh

SUITE=bookworm
MIRROR=http://deb.debian.org/debian
INCLUDE=git,sudo,ca-certificates
# /etc/apt/sources.list.d/debian.sources as Debian's own bookworm images
# have it (debootstrap alone writes only "bookworm main").
SOURCES='Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
'
ROOT_RECIPE="debootstrap --variant=minbase --include=$INCLUDE $SUITE $MIRROR; sources $SOURCES; no apt lists, no archives; v1"
ROOT_KEY=$(printf '%s' "$ROOT_RECIPE" | sha256sum | cut -c1-16)
BARE=$FRESH/roots/$SUITE-$ROOT_KEY

ROOT_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
USER_PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games

NICE="nice -n 19 ionice -c3"

# The SHA-256 (16 hex digits) of the host's extra CA certificates: part of
# the key of anything made in a root with them.
ca_sum() {
    # shellcheck disable=SC2046
    cat $(find /usr/local/share/ca-certificates -name '*.crt' 2>/dev/null | sort) \
        </dev/null | sha256sum | cut -c1-16
}

# The shell that runs inside the new namespaces: host binaries until
# pivot_root, the root's own after it. The pass's overlay is mounted, /proc
# new, /sys and /dev the host's, /run a tmpfs, the binds bound; PID 1 of
# the namespace is the step, so what it leaves running ends with it.
# shellcheck disable=SC2016
ENTER_SH='
set -eu
r=$1 who=$2 binds=$3 lower=$4 upper=$5 work=$6
shift 6
mount -t overlay overlay -o "lowerdir=$lower,upperdir=$upper,workdir=$work" "$r"
mount -t proc -o nosuid,nodev,noexec proc "$r/proc"
mount --rbind /sys "$r/sys"
mount --rbind /dev "$r/dev"
mount -t tmpfs -o nosuid,nodev,mode=0755 tmpfs "$r/run"
mkdir -m 1777 "$r/run/lock"
printf "%s\n" "$binds" | while read -r src dst; do
    [ -n "$src" ] || continue
    mkdir -p "$r$dst"
    mount --bind "$src" "$r$dst"
done
cd "$r"
pivot_root . mnt
umount -l /mnt
cd /
if [ "$who" = root ]; then
    exec env -i HOME=/root USER=root LOGNAME=root SHELL=/bin/bash TERM=dumb \
        PATH="$ROOT_PATH" "$@"
fi
exec runuser -u "$who" -- env -i HOME="/home/$who" USER="$who" LOGNAME="$who" \
    SHELL=/bin/bash TERM=dumb PATH="$USER_PATH" "$@"
'

enter() {
    local d=$1 who=$2 binds=$3 lower upper work
    shift 3
    read -r lower upper work <"$d/layers"
    ROOT_PATH=$ROOT_PATH USER_PATH=$USER_PATH $NICE \
        unshare --mount --pid --fork --propagation private -- \
        /bin/sh -c "$ENTER_SH" enter "$d/root" "$who" "$binds" "$lower" "$upper" "$work" "$@"
}

layers() {
    mkdir -p "$1/$3" "$1/$3.work" "$1/root"
    printf '%s %s %s\n' "$2" "$1/$3" "$1/$3.work" >"$1/layers"
}

# mount_layers PASSDIR: the pass's overlay on PASSDIR/root, in the caller's
# (private) mount namespace, for host-side preparation.
mount_layers() {
    local lower upper work
    read -r lower upper work <"$1/layers"
    mount -t overlay overlay -o "lowerdir=$lower,upperdir=$upper,workdir=$work" "$1/root"
}

root_files() {
    local r=$1 cas
    cp /etc/resolv.conf "$r/etc/resolv.conf"
    cp /etc/hosts "$r/etc/hosts"
    # apt's postinst scripts would start dockerd, containerd, podman's
    # units... in the host's network namespace: hold them back, as Debian's
    # own container images do.
    printf '#!/bin/sh\nexit 101\n' >"$r/usr/sbin/policy-rc.d"
    chmod 0755 "$r/usr/sbin/policy-rc.d"
    # dpkg without an fsync per file, as in Debian's own container images:
    # the same files installed, minutes less on this disk.
    echo force-unsafe-io >"$r/etc/dpkg/dpkg.cfg.d/fresh-check-unsafe-io"
    cas=$(find /usr/local/share/ca-certificates -name '*.crt' 2>/dev/null || true)
    if [ -n "$cas" ]; then
        # shellcheck disable=SC2086
        cp $cas "$r/usr/local/share/ca-certificates/"
    fi
}

# keep_newest DIR PATTERN N: remove all but the N most recently touched
# entries of DIR matching PATTERN.
keep_newest() {
    find "$1" -mindepth 1 -maxdepth 1 -name "$2" -printf '%T@ %p\n' | sort -rn |
        tail -n +$(($3 + 1)) | while read -r _ old; do
        say "removing $old (not used since a newer one)"
        rm -rf "$old"
    done
}

bare_root() {
    mkdir -p "$FRESH/roots"
    # one builder at a time (the checks may start together); held until the
    # caller exits, which is brief when the root exists
    exec 9>"$FRESH/roots.lock"
    flock 9
    if [ -d "$BARE" ]; then
        say "bare root: $BARE (cached; recipe: debootstrap --variant=minbase --include=$INCLUDE $SUITE)"
        flock -u 9
        return
    fi
    command -v debootstrap >/dev/null 2>&1 ||
        die "step bare-root: debootstrap is missing on this host (apt-get install debootstrap)"
    local tmp start
    tmp=$(mktemp -d "$FRESH/roots/build.XXXXXX")
    start=$(date +%s)
    say "bare root: building with debootstrap --variant=minbase --include=$INCLUDE $SUITE from $MIRROR (a few minutes)"
    if ! $NICE debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$tmp/root" "$MIRROR" \
        >"$tmp/log" 2>&1; then
        tail -n 20 "$tmp/log" >&2
        rm -rf "$tmp"
        die "step bare-root: debootstrap failed (log above)"
    fi
    rm -f "$tmp/root/etc/apt/sources.list"
    printf '%s' "$SOURCES" >"$tmp/root/etc/apt/sources.list.d/debian.sources"
    rm -rf "$tmp/root/var/lib/apt/lists/"* "$tmp/root/var/cache/apt/"*.bin
    find "$tmp/root/var/cache/apt/archives" -name '*.deb' -delete
    mv "$tmp/root" "$BARE"
    rm -rf "$tmp"
    # keep the two newest recipes' roots (and nothing built on older ones)
    keep_newest "$FRESH/roots" "$SUITE-*" 2
    say "bare root: built $BARE in $(($(date +%s) - start)) s"
    flock -u 9
}

# ---------------------------------------------------------------------------
# Steps.

FAILED=""
SUMMARY=""
STEP_DIR=${STEP_DIR:-/root}
DPKG_NOISE='^(Selecting previously unselected|Preparing to unpack|Unpacking |Setting up |Processing triggers for|\(Reading database|update-alternatives: |Created symlink |Adding |Updating certificates|done\.$)'

summary() {
    SUMMARY="$SUMMARY$(printf '  %-28s %5s s  %s' "$1" "$2" "$3")
"
}

# step PASS NAME WHAT CMD: run CMD (bash, in STEP_DIR) in the pass's root;
# WHAT says what it installs and from where.
step() {
    local pass=$1 name=$2 what=$3 cmd=$4 start rc
    printf '\n==> %s/%s (at +%s s): %s\n' "$pass" "$name" "$(($(date +%s) - T0))" "$what"
    printf '    $ %s\n' "$cmd"
    start=$(date +%s)
    set +e
    # dpkg's per-package lines (a thousand for install-deps) go to the log only
    enter "$PASS_DIR" "$PASS_WHO" "$PASS_BINDS" /bin/bash -c "set -eu; cd $STEP_DIR; $cmd" \
        </dev/null 2>&1 | tee -a "$PASS_LOG" | grep --line-buffered -vE "$DPKG_NOISE" |
        sed -u 's/^/    | /'
    rc=${PIPESTATUS[0]}
    set -e
    summary "$pass/$name" "$(($(date +%s) - start))" \
        "$([ "$rc" -eq 0 ] && echo ok || echo "FAILED (exit $rc)")"
    if [ "$rc" -ne 0 ]; then
        FAILED="$pass/$name"
        say "step $pass/$name failed: \`$cmd\` exited $rc as $PASS_WHO in a bare Debian 12 (log: $PASS_LOG)" >&2
        return 1
    fi
}

# ---------------------------------------------------------------------------
# A run.

start_run() {
    mkdir -p "$1"
    exec 8>"$1/lock"
    if ! flock -n 8; then
        say "waiting for another $2 to finish"
        flock 8
    fi
    T0=$(date +%s)
    bare_root
    WORK=$(mktemp -d "$1/work.XXXXXX")
    # the last run's logs, one per pass, outside the scratch roots
    LOGS=$1/logs
    mkdir -p "$LOGS"
    rm -f "$LOGS"/*.log
    trap scratch_cleanup EXIT
}

# The passes' mounts live in their own namespaces; never delete through one
# that is somehow visible here. ENTER_HINT: how to enter a kept pass.
scratch_cleanup() {
    if grep -q " $WORK/" /proc/self/mountinfo; then
        say "leaving $WORK: something is still mounted under it" >&2
    elif [ -n "$KEEP" ]; then
        say "kept: $WORK (enter with: $SELF --enter $WORK/PASS${ENTER_HINT:-})"
    else
        rm -rf "$WORK"
    fi
}
