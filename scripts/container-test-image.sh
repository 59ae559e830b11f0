#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Build (or reuse) the root filesystem tarball of the test image the docker
# and podman integration tests import: Debian bookworm, minbase, with the
# interpreters the contract tests run (no registry is reachable, so nothing
# is pulled). The tarball is cached outside the repository, keyed by the
# SHA-256 of this recipe, so a second run on the same machine only reads it.
#
#   scripts/container-test-image.sh         prints the tarball's path
#
# LLM_SANDBOX_CACHE (default /var/cache/llm-sandbox) holds the cache.
set -eu

SUITE=bookworm
MIRROR=http://deb.debian.org/debian
INCLUDE=python3,python3-pip,nodejs,ruby,ca-certificates
# The host's own CAs (an egress proxy that re-signs TLS, as on a CI machine)
# go into the image too, so the installs' pip and npm trust what the host does.
LOCAL_CAS=$(ls /usr/local/share/ca-certificates/*.crt 2>/dev/null || true)
CA_SUM=$(cat $LOCAL_CAS </dev/null | sha256sum | cut -c1-16)
RECIPE="debootstrap --variant=minbase --include=$INCLUDE $SUITE $MIRROR; local CAs $CA_SUM; clean apt lists v1"
KEY=$(printf '%s' "$RECIPE" | sha256sum | cut -c1-16)
CACHE=${LLM_SANDBOX_CACHE:-/var/cache/llm-sandbox}/images
OUT="$CACHE/$SUITE-$KEY.tar"

if [ -s "$OUT" ]; then
    echo "$OUT"
    exit 0
fi
command -v debootstrap >/dev/null 2>&1 || {
    echo "container-test-image: debootstrap is missing (scripts/install-deps.sh installs it)" >&2
    exit 1
}
mkdir -p "$CACHE"
dir=$(mktemp -d "$CACHE/build.XXXXXX")
trap 'rm -rf "$dir"' EXIT
echo "container-test-image: building $OUT (debootstrap, a few minutes)" >&2
debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$dir/root" "$MIRROR" >"$dir/log" 2>&1 || {
    tail -n 20 "$dir/log" >&2
    exit 1
}
if [ -n "$LOCAL_CAS" ]; then
    cp $LOCAL_CAS "$dir/root/usr/local/share/ca-certificates/"
    chroot "$dir/root" update-ca-certificates >"$dir/log" 2>&1 || {
        tail -n 20 "$dir/log" >&2
        exit 1
    }
fi
rm -rf "$dir/root/var/lib/apt/lists"/* "$dir/root/var/cache/apt"/*.bin
tar -C "$dir/root" --numeric-owner -cf "$dir/root.tar" .
mv "$dir/root.tar" "$OUT"
echo "$OUT"
