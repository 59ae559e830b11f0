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
INCLUDE=python3,nodejs,ruby
RECIPE="debootstrap --variant=minbase --include=$INCLUDE $SUITE $MIRROR; clean apt lists v1"
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
rm -rf "$dir/root/var/lib/apt/lists"/* "$dir/root/var/cache/apt"/*.bin
tar -C "$dir/root" --numeric-owner -cf "$dir/root.tar" .
mv "$dir/root.tar" "$OUT"
echo "$OUT"
