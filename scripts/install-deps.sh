#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Install everything llm-sandbox needs to build, run and test on Debian 12,
# idempotently: nothing is downloaded when everything is already there.
# Runs apt through sudo when not root. Used by the README's commands and
# by .ci/run (through scripts/test.sh).
set -eu

PACKAGES="
  gcc g++ make cmake ninja-build pkg-config
  libltdl-dev libjson-c-dev libyaml-dev libcurl4-openssl-dev libcmocka-dev libseccomp-dev
  libmicrohttpd-dev
  bubblewrap passt python3 python3-pytest procps
  clang clang-format libclang-rt-14-dev valgrind
"

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
    echo "install-deps: installing:$missing"
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
