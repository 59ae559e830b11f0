#!/bin/bash
# SPDX-License-Identifier: MIT
#
# package-check.sh: the Debian packages (debian/) as a user gets them. It
# builds the .debs of this checkout's HEAD in a bare Debian 12 root, lints
# them, installs them with apt into another bare Debian 12 root and uses
# them there.
#
#   scripts/package-check.sh            build, lint, install, use
#   scripts/package-check.sh --cold     no snapshots, no compiler or apt cache
#   scripts/package-check.sh --keep     keep the scratch roots (paths printed)
#   scripts/package-check.sh --enter DIR [CMD...]
#                                       a shell (or CMD) in a kept pass DIR
#
# The roots are scripts/fresh-check.sh's (scripts/lib/debian-root.sh): the
# cached bare debootstrap root under overlay layers, entered with unshare
# and pivot_root as root, so bubblewrap works inside.
#
# Steps (the pass "build", then "use"):
#  build/deps      Build-Depends (apt-get build-dep on debian/control),
#                  lintian and ccache from deb.debian.org
#  build/debs      dpkg-buildpackage -us -uc -b in a clone of HEAD (without
#                  debug symbol packages, which nothing here checks)
#  build/lintian   lintian on the .changes: no error or warning may be left,
#                  and every override in debian/ must say why (a comment)
#  use/deps        what the packages depend on, and the tools the checks use
#                  (man-db, gcc, make, pkgconf, cmake, python3-pytest)
#  use/install     apt-get install ./llm-sandbox_*.deb ./...-dev ./...-bwrap
#                  ./...-nsjail ./...-docker ./...-mxc ./...-kubernetes ./...-wsl2
#                  ./...-python ./...-ruby
#  use/fields      each .deb's Depends against what the core dlopens: every
#                  package with a manifest that says host: [http] Depends on
#                  libcurl4, the core Recommends libmicrohttpd12
#  use/run         llm-sandbox run --code 'print(6*7)' prints 42
#  use/doctor      llm-sandbox doctor passes
#  use/mcp         the MCP server on stdio answers tools/list
#  use/remove-ruby apt-get remove llm-sandbox-lang-ruby: ruby leaves
#                  `plugins` and get_supported_languages, nothing else changes
#  use/reinstall   apt-get install ./llm-sandbox-lang-ruby_*.deb: all back
#  use/man         man llm-sandbox shows the page
#  use/examples    examples/ built with pkg-config and CMake against the
#                  installed -dev package and run through
#                  LLM_SANDBOX_PLUGIN_PATH (tests/packaging/test_examples.py)
#  use/purge       apt-get purge removes every file of ours, the conffile too
# The last line says "package-check: passed (...)" or "package-check: FAILED
# at step PASS/STEP"; the exit code is 0 or 1.
#
# Caches, outside the repository under $LLM_SANDBOX_CACHE/packaging
# (default /var/cache/llm-sandbox/packaging), used unless --cold:
#  - snapshots/build-KEY: the build root with its Build-Depends, lintian and
#    ccache installed, keyed by the bare root, debian/control's
#    Build-Depends, the host's CA certificates and the ISO week.
#  - snapshots/use-KEY: the use root with what the packages depend on (made
#    by installing them and purging them again), keyed by the bare root, the
#    packages' Depends and Recommends, the tools and the ISO week. A changed
#    dependency makes a new one, so a missing Depends cannot hide.
#  - ccache/: the compiler cache of the build (content-addressed).
#  - apt's archives, shared with fresh-check ($LLM_SANDBOX_CACHE/fresh/cache).
# Heavy work runs under nice -n 19 ionice -c3. Needs root.
# The steps' commands run in the root: their $ expand there, not here.
# shellcheck disable=SC2016
set -eu

SRC=$(cd "$(dirname "$0")/.." && pwd)
SELF=$SRC/scripts/package-check.sh

say() { printf 'package-check: %s\n' "$*"; }
die() {
    printf 'package-check: %s\n' "$*" >&2
    exit 1
}

# shellcheck source=scripts/lib/debian-root.sh
. "$SRC/scripts/lib/debian-root.sh"

PKG=$TOP/packaging
# what the use root installs of ours, and the tools its checks need
OURS="llm-sandbox llm-sandbox-dev llm-sandbox-backend-bwrap llm-sandbox-backend-nsjail"
OURS="$OURS llm-sandbox-backend-docker llm-sandbox-backend-mxc llm-sandbox-backend-kubernetes"
OURS="$OURS llm-sandbox-backend-wsl2"
OURS="$OURS llm-sandbox-lang-python"
OURS="$OURS llm-sandbox-lang-ruby"
TOOLS="man-db gcc libc6-dev make pkgconf cmake python3-pytest"

# ---------------------------------------------------------------------------
# Host side of a pass (run under unshare --mount by the pass): the root's
# files from the host, and what the pass needs copied in.

# prepare_host PASSDIR WHAT: WHAT is "deps-build" (debian/control for
# apt-get build-dep), "clone" (a clone of HEAD in /root/llm-sandbox) or
# "use" (the .debs in /root/debs, examples/ and the test in /root/src).
prepare_host() {
    local d=$1 r=$1/root
    mount_layers "$d"
    root_files "$r"
    case $2 in
    deps-build)
        mkdir -p "$r/root/deps/debian"
        git -C "$SRC" show "$REV:debian/control" >"$r/root/deps/debian/control"
        ;;
    clone)
        rm -rf "$r/root/llm-sandbox"
        git clone -q --no-hardlinks "$SRC" "$r/root/llm-sandbox"
        git -C "$r/root/llm-sandbox" checkout -q --detach "$REV"
        ;;
    use)
        rm -rf "$r/root/debs" "$r/root/src"
        cp -r "$WORK/debs" "$r/root/debs"
        mkdir -p "$r/root/src"
        git -C "$SRC" archive "$REV" examples tests/packaging | tar -x -C "$r/root/src"
        printf '%s' "$USE_LIB" >"$r/root/lib.sh"
        ;;
    esac
}

host_prepare() {
    local rc=0
    $NICE unshare --mount --propagation private -- "$SELF" --prepare-host "$1" "$2" "$REV" \
        "$WORK" >>"$PASS_LOG" 2>&1 || rc=$?
    if [ "$rc" -ne 0 ]; then
        FAILED="$3/prepare"
        tail -n 20 "$PASS_LOG" >&2
        say "step $3/prepare failed: the files copied into the root (exit $rc; log: $PASS_LOG)" >&2
        return 1
    fi
}

# snapshot PASS KEY: PASS_DIR's deps layer becomes the snapshot KEY; the
# pass goes on in a layer above it.
snapshot() {
    mkdir -p "$PKG/snapshots"
    mv "$PASS_DIR/deps" "$PKG/snapshots/$1-$2"
    rm -rf "$PASS_DIR/deps.work"
    layers "$PASS_DIR" "$PKG/snapshots/$1-$2:$BARE" top
    say "snapshot: $PKG/snapshots/$1-$2"
    keep_newest "$PKG/snapshots" "$1-*" 2
}

# start_pass PASS KEY: PASS_DIR and its layers, on the snapshot KEY when it
# exists (then SNAP_REUSED=1).
start_pass() {
    PASS_DIR=$WORK/$1
    PASS_LOG=$LOGS/$1.log
    PASS_WHO=root
    : >"$PASS_LOG"
    mkdir -p "$PASS_DIR"
    SNAP_REUSED=""
    if [ -z "$COLD" ] && [ -d "$PKG/snapshots/$1-$2" ]; then
        touch "$PKG/snapshots/$1-$2"
        layers "$PASS_DIR" "$PKG/snapshots/$1-$2:$BARE" top
        SNAP_REUSED=1
    else
        layers "$PASS_DIR" "$BARE" deps
    fi
    PASS_BINDS=""
    if [ -z "$COLD" ]; then
        mkdir -p "$FRESH/cache/apt-archives" "$PKG/ccache"
        PASS_BINDS="$FRESH/cache/apt-archives /var/cache/apt/archives
$PKG/ccache /var/cache/ccache"
    fi
}

# ---------------------------------------------------------------------------
# The build pass.

build_pass() {
    local key
    key=$(printf '%s\n' "$ROOT_KEY" "$CA_SUM" "$(date -u +%G-W%V)" v1 \
        "$(git -C "$SRC" show "$REV:debian/control" | sed -n '/^Build-Depends:/,/^[A-Z]/p')" |
        sha256sum | cut -c1-16)
    start_pass build "$key"
    if [ -z "$SNAP_REUSED" ]; then
        printf '\n==> build/prepare: the bare root %s\n' "$BARE"
        host_prepare "$PASS_DIR" deps-build build || return 0
        step build deps "Build-Depends, lintian and ccache with apt from deb.debian.org" \
            'apt-get update -q && apt-get build-dep -y -q ./deps && apt-get install -y -q --no-install-recommends lintian ccache && rm -rf deps' ||
            return 0
        [ -n "$COLD" ] || snapshot build "$key"
    else
        printf '\n==> build/prepare: the snapshot %s (Build-Depends, lintian, ccache)\n' \
            "$PKG/snapshots/build-$key"
        summary build/deps - "from the snapshot"
    fi
    host_prepare "$PASS_DIR" clone build || return 0
    local ccache=""
    [ -n "$COLD" ] || ccache="CMAKE_C_COMPILER_LAUNCHER=ccache CCACHE_DIR=/var/cache/ccache "
    step build debs "nothing installed; dpkg-buildpackage in a clone of $REV" \
        "cd llm-sandbox && ${ccache}DEB_BUILD_OPTIONS=\"parallel=2 noautodbgsym\" dpkg-buildpackage -us -uc -b && ls -l ../*.deb" ||
        return 0
    step build lintian "nothing installed" \
        'lintian --fail-on error,warning --tag-display-limit 0 ./*.changes && llm-sandbox/tests/packaging/check-overrides.sh llm-sandbox/debian' ||
        return 0
    mkdir -p "$WORK/debs"
    cp "$PASS_DIR/top/root/"*.deb "$WORK/debs/" 2>/dev/null ||
        cp "$PASS_DIR/deps/root/"*.deb "$WORK/debs/"
}

# ---------------------------------------------------------------------------
# The use pass.

# Helpers of the use steps, /root/lib.sh in the root: debs PACKAGE... (the
# .deb files), plugins (name kind version status manifest, a line each),
# languages (get_supported_languages). What they said before ruby was
# removed is kept in /root/state.
USE_LIB='
debs() { for p in "$@"; do ls /root/debs/${p}_*.deb; done; }
plugins() { llm-sandbox plugins --json | python3 -c "
import json, sys
for p in json.load(sys.stdin):
    print(p[\"name\"], p[\"kind\"], p[\"version\"], p[\"status\"], p[\"manifest\"])"; }
languages() { python3 /root/src/tests/packaging/mcp_probe.py languages; }
'

use_pass() {
    local key fields
    # the use root is keyed by what our packages ask for
    fields=$(for f in "$WORK"/debs/*.deb; do dpkg-deb -f "$f" Package Depends Recommends; done)
    key=$(printf '%s\n' "$ROOT_KEY" "$CA_SUM" "$(date -u +%G-W%V)" v1 "$OURS" "$TOOLS" "$fields" |
        sha256sum | cut -c1-16)
    start_pass use "$key"
    local ours_debs
    ours_debs=$(for p in $OURS; do printf '$(debs %s) ' "$p"; done)
    if [ -z "$SNAP_REUSED" ]; then
        host_prepare "$PASS_DIR" use use || return 0
        step use deps "what our packages depend on (apt, deb.debian.org), and $TOOLS; ours are purged again" \
            ". lib.sh; apt-get update -q && apt-get install -y -q $ours_debs $TOOLS && apt-get purge -y -q $OURS && rm -rf debs src lib.sh" ||
            return 0
        [ -n "$COLD" ] || snapshot use "$key"
    else
        printf '\n==> use/deps: the snapshot %s\n' "$PKG/snapshots/use-$key"
        summary use/deps - "from the snapshot"
    fi
    host_prepare "$PASS_DIR" use use || return 0
    step use install "ours: apt-get install of the .debs (their dependencies are in place)" \
        ". lib.sh; apt-get install -y -q $ours_debs && dpkg -l 'llm-sandbox*' | grep ^ii" ||
        return 0
    step use fields "nothing installed" \
        'python3 src/tests/packaging/debdeps.py debs debs /usr/bin/llm-sandbox' || return 0
    step use run "nothing installed; must print 42" \
        'out=$(llm-sandbox run --code "print(6*7)"); echo "$out"; [ "$out" = 42 ]' || return 0
    step use doctor "nothing installed" 'llm-sandbox doctor' || return 0
    step use mcp "nothing installed" 'python3 src/tests/packaging/mcp_probe.py tools' || return 0
    step use remove-ruby "nothing installed" \
        '. lib.sh; mkdir -p state; plugins >state/plugins; languages >state/languages
cat state/plugins state/languages
grep -q "^ruby language" state/plugins && grep -qx ruby state/languages
apt-get remove -y -q llm-sandbox-lang-ruby
test -x /usr/bin/ruby
plugins >state/plugins-after; languages >state/languages-after
diff <(grep -v "^ruby " state/plugins) state/plugins-after
diff <(grep -vx ruby state/languages) state/languages-after
echo "ruby left plugins and get_supported_languages; nothing else changed"' || return 0
    step use reinstall "nothing installed: the .deb again" \
        '. lib.sh; apt-get install -y -q $(debs llm-sandbox-lang-ruby)
diff state/plugins <(plugins) && diff state/languages <(languages)
echo "ruby is back, everything as before"' || return 0
    step use man "nothing installed" \
        'MANWIDTH=80 man llm-sandbox | head -n 8; man llm-sandbox | grep -q "run code a language model wrote"; man -w llm-sandbox.conf llm-sandbox-manifest' ||
        return 0
    step use examples "nothing installed: the kit of llm-sandbox-dev, gcc, make, cmake" \
        'SBX_EXAMPLES_PREFIX=/usr SBX_SOURCE_DIR=/root/src python3 -m pytest -q -p no:cacheprovider src/tests/packaging/test_examples.py' ||
        return 0
    step use purge "nothing installed" \
        '. lib.sh; apt-get purge -y -q $(dpkg-query -W -f "\${Package}\n" "llm-sandbox*")
left=$(ls -d /usr/bin/llm-sandbox /etc/llm-sandbox /usr/lib/*/llm-sandbox /usr/include/llm-sandbox 2>/dev/null || true)
[ -z "$left" ] || { echo "left behind: $left"; exit 1; }
echo "nothing of ours is left"' || return 0
}

# ---------------------------------------------------------------------------

main() {
    COLD=""
    KEEP=""
    while [ $# -gt 0 ]; do
        case $1 in
        --cold) COLD=1; shift ;;
        --keep) KEEP=1; shift ;;
        --prepare-host)
            # internal: host_prepare calls it under unshare --mount
            REV=$4
            WORK=$5
            prepare_host "$2" "$3"
            exit 0
            ;;
        --enter)
            [ $# -ge 2 ] || die "--enter takes a kept pass directory (WORK/build or WORK/use)"
            local dir=$2
            shift 2
            [ -f "$dir/layers" ] || die "$dir is not a kept pass directory (no $dir/layers)"
            [ $# -gt 0 ] || set -- /bin/bash -l
            enter "$dir" root "" "$@"
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
    for tool in unshare pivot_root git flock dpkg-deb; do
        command -v "$tool" >/dev/null 2>&1 || die "needs $tool on this host"
    done
    REV=$(git -C "$SRC" rev-parse HEAD)
    if [ -n "$(git -C "$SRC" status --porcelain --untracked-files=no)" ]; then
        say "note: $SRC has uncommitted changes; the check builds HEAD ($REV) without them"
    fi
    CA_SUM=$(ca_sum)
    start_run "$PKG" package-check
    say "checking the packages of $REV in bare Debian 12 roots ($([ -n "$COLD" ] && echo "cold: no caches" || echo "caches: $PKG"))"
    build_pass
    [ -n "$FAILED" ] || use_pass
    printf '\npackage-check: steps (wall time)\n%s' "$SUMMARY"
    printf '  total %s s\n' "$(($(date +%s) - T0))"
    say "logs: $LOGS/"
    trap - EXIT
    scratch_cleanup
    if [ -n "$FAILED" ]; then
        say "FAILED at step $FAILED"
        exit 1
    fi
    say "passed (build, lintian, install, use: every step, $(($(date +%s) - T0)) s in all)"
    exit 0
}

main "$@"
exit $?
