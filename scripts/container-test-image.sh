#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Build (or reuse) the root filesystem tarball of the test image the docker
# and podman integration tests import: Debian bookworm, minbase, with the
# interpreters the contract tests run (no container registry is reachable,
# so nothing is pulled), and npm from the npm registry's tarball. The
# tarball is cached outside the repository, keyed by the SHA-256 of this
# recipe, so a second run on the same machine only reads it.
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
# npm from the registry's tarball: Debian's npm package (four hundred node-*
# packages) does not install through debootstrap. 10.8.2 supports bookworm's
# node 18.19; the integrity is the registry's dist.integrity for it, checked
# before the tarball is used.
NPM_VERSION=10.8.2
NPM_INTEGRITY=sha512-x/AIjFIKRllrhcb48dqUNAAZl0ig9+qMuN91RpZo3Cb2+zuibfh+KISl6+kVVyktDz230JKc208UkQwwMqyB+w==
NPM_URL=https://registry.npmjs.org/npm/-/npm-$NPM_VERSION.tgz
RECIPE="debootstrap --variant=minbase --include=$INCLUDE $SUITE $MIRROR; local CAs $CA_SUM; clean apt lists v1; npm $NPM_VERSION $NPM_INTEGRITY in /usr/lib/node_modules/npm v1"
KEY=$(printf '%s' "$RECIPE" | sha256sum | cut -c1-16)
TOP=${LLM_SANDBOX_CACHE:-/var/cache/llm-sandbox}
CACHE=$TOP/images
OUT="$CACHE/$SUITE-$KEY.tar"

# Only the two tarballs used last are kept (another checkout's recipe may
# want the other one): a hit marks its tarball used, a build prunes.
if [ -s "$OUT" ]; then
    touch "$OUT"
    echo "$OUT"
    exit 0
fi
command -v debootstrap >/dev/null 2>&1 || {
    echo "container-test-image: debootstrap is missing (scripts/install-deps.sh installs it)" >&2
    exit 1
}
mkdir -p "$CACHE"

# The hex SHA-512 that an npm "sha512-<base64>" integrity names.
integrity_hex() {
    printf '%s' "${1#sha512-}" | base64 -d | od -An -v -tx1 | tr -d ' \n'
}

# npm's tarball, downloaded once into $TOP/downloads under the name of its
# content, and checked against the pinned integrity every time it is used.
npm_tarball() {
    want=$(integrity_hex "$NPM_INTEGRITY")
    file="$TOP/downloads/sha512-$want.tgz"
    if [ ! -s "$file" ]; then
        mkdir -p "$TOP/downloads"
        curl -fsSL --retry 2 --max-time 300 -o "$file.part" "$NPM_URL" || {
            rm -f "$file.part"
            echo "container-test-image: cannot download $NPM_URL" >&2
            return 1
        }
        mv "$file.part" "$file"
    fi
    got=$(sha512sum "$file" | cut -d' ' -f1)
    if [ "$got" != "$want" ]; then
        rm -f "$file"
        echo "container-test-image: $NPM_URL does not match $NPM_INTEGRITY (got sha512 $got)" >&2
        return 1
    fi
    echo "$file"
}

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
# npm, root's, as a global install would put it; npm and npx on the PATH
tgz=$(npm_tarball)
npm_dir="$dir/root/usr/lib/node_modules/npm"
mkdir -p "$npm_dir"
tar -xzf "$tgz" -C "$npm_dir" --strip-components=1 --no-same-owner --no-same-permissions
chmod -R u+rwX,go+rX,go-w "$npm_dir"
chmod 0755 "$npm_dir/bin/npm-cli.js" "$npm_dir/bin/npx-cli.js"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$dir/root/usr/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$dir/root/usr/bin/npx"
[ "$(chroot "$dir/root" /usr/bin/npm --version 2>"$dir/log")" = "$NPM_VERSION" ] || {
    echo "container-test-image: npm $NPM_VERSION does not run in the image" >&2
    tail -n 20 "$dir/log" >&2
    exit 1
}
rm -rf "$dir/root/var/lib/apt/lists"/* "$dir/root/var/cache/apt"/*.bin "$dir/root/root/.npm"
tar -C "$dir/root" --numeric-owner -cf "$dir/root.tar" .
mv "$dir/root.tar" "$OUT"
ls -t "$CACHE/$SUITE"-*.tar | tail -n +3 | while read -r old; do
    echo "container-test-image: removing $old, not used since an older build" >&2
    rm -f "$old"
done
echo "$OUT"
