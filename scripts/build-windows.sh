#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Cross-build llm-sandbox for 64-bit Windows with Debian's mingw-w64.
#
# 1. Installs the Debian packages this needs (listed in PACKAGES below).
# 2. Builds the four libraries the core needs on Windows -- libyaml, json-c,
#    libltdl (from libtool) and libcurl (Schannel, no OpenSSL) -- from their
#    Debian source packages (apt-get source, through a private apt
#    configuration with deb-src entries; the system's sources are left
#    alone), into a cache outside the repository:
#      $LLM_SANDBOX_CACHE/windows/deps-<key>   (default /var/cache/llm-sandbox)
#    where <key> hashes the four source versions, the recipe
#    (scripts/lib/windows-deps.sh), the toolchain file and the compiler's
#    version. This cold build is one-time; later runs reuse it.
# 3. Builds natively, into BUILD_DIR, what a WSL2 distribution runs: the
#    core's seccomp policy as BPF (embedded in llm-sandbox.exe) and the
#    static sandbox agent (libexec/llm-sandbox/sbx-agent).
# 4. Configures and builds llm-sandbox.exe itself (the core, the engine,
#    the MCP server and the CLI without their Linux-only parts:
#    cmake/SbxWindowsCore.cmake), the plugin DLLs (the languages, wsl2) and
#    the contract tests with cmake/mingw-w64.cmake into BUILD_DIR
#    (default build-windows in the repository), copying the DLLs it needs
#    beside the executable.
#
# Usage: scripts/build-windows.sh [--deps-only] [BUILD_DIR]
# The last line of output is the path of the built llm-sandbox.exe (with
# --deps-only: of the dependency prefix).
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEPS_ONLY=0
if [ "${1:-}" = --deps-only ]; then
    DEPS_ONLY=1
    shift
fi
BUILD_DIR=${1:-$ROOT/build-windows}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$(pwd)/$BUILD_DIR ;; esac
CACHE=${LLM_SANDBOX_CACHE:-/var/cache/llm-sandbox}/windows
TRIPLE=x86_64-w64-mingw32
TOOLCHAIN=$ROOT/cmake/mingw-w64.cmake
JOBS=${JOBS:-$(nproc)}
SRC_PACKAGES="libyaml json-c libtool curl"

say() { echo "build-windows: $*" >&2; }
die() { say "$*"; exit 1; }

# --- 1. Debian packages --------------------------------------------------
# The cross compiler, wine to run the result (wine: the `wine` command), dpkg-dev for apt-get source
# (dpkg-source unpacks and patches), the build tools the four
# dependencies' own builds run, and the native compiler and libraries for
# the Linux pieces (step 3).
PACKAGES="gcc-mingw-w64-x86-64 wine wine64 dpkg-dev cmake ninja-build make pkg-config
  autoconf automake m4 python3 gcc libc6-dev libseccomp-dev libjson-c-dev"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing="$missing $p"
done
if [ -n "$missing" ]; then
    say "installing with apt-get from the Debian archive:$missing"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    # shellcheck disable=SC2086
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
fi

# --- 2. the dependencies, from Debian sources, cached -------------------
mkdir -p "$CACHE" 2>/dev/null || $SUDO mkdir -p "$CACHE"
[ -w "$CACHE" ] || $SUDO chown "$(id -u):$(id -g)" "$CACHE"
# One build of the cache at a time (test.sh and a developer may meet).
exec 9>"$CACHE/.lock"
flock 9

# A private apt configuration: deb-src lines for the release this host
# runs, lists kept in the cache. The system's /etc/apt is not changed.
APT_DIR=$CACHE/apt
mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/archives/partial"
CODENAME=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
cat > "$APT_DIR/sources.list.new" <<EOF
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $CODENAME main
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $CODENAME-updates main
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security $CODENAME-security main
EOF
mv "$APT_DIR/sources.list.new" "$APT_DIR/sources.list"
apt_private() { # apt-get or apt-cache, then its arguments
    tool=$1
    shift
    "$tool" -q -o Dir::Etc::SourceList="$APT_DIR/sources.list" \
        -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists="$APT_DIR/lists" \
        -o Dir::Cache="$APT_DIR" -o Dir::State::Status=/var/lib/dpkg/status \
        -o APT::Sandbox::User="$(id -un)" "$@"
}
# The lists are fetched once (LLM_SANDBOX_WINDOWS_REFRESH=1 fetches them
# again, which may move the key to newer Debian revisions).
if [ -z "$(ls "$APT_DIR/lists" | grep Sources || true)" ] ||
    [ "${LLM_SANDBOX_WINDOWS_REFRESH:-0}" = 1 ]; then
    say "fetching the Debian source lists for $CODENAME into $APT_DIR"
    apt_private apt-get update >&2
fi
VERSIONS=""
for p in $SRC_PACKAGES; do
    v=$(apt_private apt-cache showsrc "$p" 2>/dev/null | awk '/^Version:/ {print $2}' | sort -V | tail -1)
    [ -n "$v" ] || die "no Debian source package '$p' in $APT_DIR/sources.list"
    VERSIONS="$VERSIONS $p=$v"
done
# shellcheck source=scripts/lib/windows-deps.sh
. "$ROOT/scripts/lib/windows-deps.sh"
KEY=$( { echo "$VERSIONS"; cat "$ROOT/scripts/lib/windows-deps.sh" "$TOOLCHAIN"; $TRIPLE-gcc -dumpversion; } |
    sha256sum | cut -c1-16)
PREFIX=$CACHE/deps-$KEY

if [ -f "$PREFIX/VERSIONS" ]; then
    say "dependencies cached in $PREFIX ($VERSIONS )"
else
    say "dependencies not cached yet: building them once into $PREFIX (one-time, several minutes)"
    t0=$(date +%s)
    build_deps
    say "dependencies built in $(( $(date +%s) - t0 )) s"
fi

if [ "$DEPS_ONLY" = 1 ]; then
    echo "$PREFIX"
    exit 0
fi

# --- 3. the Linux pieces a WSL2 distribution runs ------------------------
# Built natively (the distribution's kernel and libc are Linux's, x86_64
# as this build): the core's seccomp policy compiled to BPF by the same
# generator as the Linux build (embedded in llm-sandbox.exe: Windows has no
# libseccomp), and the static sandbox agent the WSL2 plugin sends down the
# launcher's stdin with each box (libseccomp-dev and libjson-c-dev, as
# the Linux build).
LINUX_DIR=$BUILD_DIR/linux-side
mkdir -p "$LINUX_DIR"
cmake -DIN="$ROOT/core/seccomp/policy.list" -DOUT="$LINUX_DIR/seccomp_list.c" \
    -P "$ROOT/cmake/embed.cmake" >&2
# shellcheck disable=SC2046
cc -std=c17 -O2 -D_GNU_SOURCE -I"$ROOT/core/include" -I"$ROOT/core/src" \
    "$ROOT/core/tools/seccomp_gen.c" "$ROOT/core/src/host/seccomp.c" \
    "$ROOT/core/src/host/seccomp_parse.c" "$ROOT/core/src/base/error.c" \
    "$ROOT/core/src/base/util.c" "$ROOT/core/src/base/dynbuf.c" "$LINUX_DIR/seccomp_list.c" \
    $(pkg-config --cflags --libs libseccomp json-c) -lpthread -o "$LINUX_DIR/sbx-seccomp-gen" ||
    die "cannot build the seccomp generator natively (install libseccomp-dev and libjson-c-dev)"
"$LINUX_DIR/sbx-seccomp-gen" "$LINUX_DIR/seccomp_bpf.gen" || die "the seccomp generator failed"
cmp -s "$LINUX_DIR/seccomp_bpf.gen" "$LINUX_DIR/seccomp_bpf.c" 2>/dev/null ||
    cp "$LINUX_DIR/seccomp_bpf.gen" "$LINUX_DIR/seccomp_bpf.c" # ninja sees a change only then
mkdir -p "$BUILD_DIR/libexec/llm-sandbox"
cc -std=c17 -O2 -D_GNU_SOURCE -static -I"$ROOT/core/agent" "$ROOT/core/agent/agent.c" \
    -o "$BUILD_DIR/libexec/llm-sandbox/sbx-agent" ||
    die "cannot build the sandbox agent natively"

# --- 4. llm-sandbox -------------------------------------------------------
# wine's state for the tests, made once per user and wine version (its
# first start takes about 20 s).
WINEPREFIX_DIR=$CACHE/wineprefix-$(id -u)-$(wine --version 2>/dev/null | tr -c 'a-zA-Z0-9.\n-' _)
export PKG_CONFIG_LIBDIR="$PREFIX/lib/pkgconfig"
export PKG_CONFIG_PATH=""
# CMake keeps what it found (libraries, pkg-config results) in its cache:
# a tree configured against another dependency prefix starts afresh.
FRESH=""
if [ -f "$BUILD_DIR/CMakeCache.txt" ] &&
    ! grep -q "^SBX_WINDOWS_PREFIX:[A-Z]*=$PREFIX\$" "$BUILD_DIR/CMakeCache.txt"; then
    say "$BUILD_DIR was configured against other dependencies: configuring it afresh"
    FRESH=--fresh
fi
# shellcheck disable=SC2086
cmake $FRESH -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$TOOLCHAIN" \
    -DSBX_WINDOWS_PREFIX="$PREFIX" -DSBX_WINEPREFIX="$WINEPREFIX_DIR" \
    -DSBX_WINDOWS_SECCOMP_BPF="$LINUX_DIR/seccomp_bpf.c" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSBX_WERROR=ON ${SBX_WINDOWS_CMAKE_ARGS:-} >&2
cmake --build "$BUILD_DIR" -j "$JOBS" >&2
EXE=$BUILD_DIR/bin/llm-sandbox.exe
[ -f "$EXE" ] || die "the build made no $EXE"
echo "$EXE"
