#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Build the MCP server's image from this project, for a cluster without a
# registry (the test cluster of scripts/k8s-cluster.sh): the project's test
# image (scripts/container-test-image.sh, Debian bookworm minbase) as the
# first layer, and a second one holding the build tree's binary, plugins and
# agent under /opt/llm-sandbox (the layout is relocatable) plus the shared
# libraries they load that the base lacks (ldd of each, and the ones the core
# opens at run time: libcurl, libmicrohttpd). Written as a docker-archive,
# cached by content under $LLM_SANDBOX_CACHE/k8s/images.
#
#   deploy/kubernetes/server-image.sh [BUILD_DIR]
#
# Prints two lines: the archive's path and the image reference
# (docker.io/llm-sandbox/server:<hash>). Import it with
# `scripts/k8s-cluster.sh import ARCHIVE`. Needs root only for what
# container-test-image.sh needs on a cold cache.
set -eu

SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-$SRC/build}" && pwd)
CACHE=${LLM_SANDBOX_CACHE:-/var/cache/llm-sandbox}/k8s/images
REPO=docker.io/llm-sandbox/server
PREFIX=opt/llm-sandbox
# libraries the core opens with dlopen (core/CMakeLists.txt: SBX_*_SONAME)
DLOPENED="libcurl.so.4 libmicrohttpd.so.12"

mkdir -p "$CACHE"
rootfs=$("$SRC/scripts/container-test-image.sh")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage=$work/stage
mkdir -p "$stage/$PREFIX/bin" "$stage/$PREFIX/lib/llm-sandbox/plugins" \
    "$stage/$PREFIX/libexec/llm-sandbox"

# The build tree's files, stripped (debug info is most of their size).
cp "$BUILD/bin/llm-sandbox" "$stage/$PREFIX/bin/"
cp -a "$BUILD/lib/llm-sandbox/plugins/." "$stage/$PREFIX/lib/llm-sandbox/plugins/"
cp "$BUILD/libexec/llm-sandbox/sbx-agent" "$stage/$PREFIX/libexec/llm-sandbox/"
find "$stage/$PREFIX" -type f \( -name '*.so' -o -perm -u+x \) -exec strip --strip-debug {} + \
    2>/dev/null || true

# What the base image holds already (listed once per base image).
listing=$CACHE/$(basename "$rootfs" .tar).list
if [ ! -s "$listing" ]; then
    tar -tf "$rootfs" | sed 's|^\./||; s|/$||' | sort -u >"$listing.part"
    mv "$listing.part" "$listing"
fi

# The libraries of every ELF file we ship and of the dlopened ones, with
# the symlinks that name them, where the base lacks them. Debian's
# merged /usr: /lib is /usr/lib.
libs=$work/libs
: >"$libs"
for f in $(find "$stage/$PREFIX" -type f) $(for l in $DLOPENED; do
    /sbin/ldconfig -p | awk -v l="$l" '$1 == l { print $NF; exit }'; done); do
    [ "$(od -An -tx1 -N4 "$f" | tr -d ' \n')" = 7f454c46 ] || continue # ELF
    echo "$f" | grep -q "^$stage" || echo "$f" >>"$libs"
    ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' >>"$libs"
done
sort -u "$libs" | while read -r lib; do
    for p in "$lib" "$(readlink -f "$lib")"; do
        rel=$(echo "$p" | sed 's|^/lib/|usr/lib/|; s|^/||')
        grep -qxF "$rel" "$listing" && continue
        mkdir -p "$stage/$(dirname "$rel")"
        cp -a "$p" "$stage/$rel"
    done
done

# The second layer, reproducible: sorted, root's, no times.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
    -C "$stage" -cf "$work/layer.tar" .
key=$( (basename "$rootfs"; sha256sum <"$work/layer.tar") | sha256sum | cut -c1-16)
out=$CACHE/server-$key.tar
ref=$REPO:$key
if [ ! -s "$out" ]; then
    /usr/bin/python3 "$SRC/tests/k8s/pack_image.py" "$ref" "$out" \
        --layer-tar "$rootfs" --layer-tar "$work/layer.tar" \
        --cmd '["/opt/llm-sandbox/bin/llm-sandbox", "serve", "--http", "0.0.0.0:8080"]' \
        2>/dev/null
    # older archives of this script are superseded
    find "$CACHE" -maxdepth 1 -name 'server-*.tar' ! -name "server-$key.tar" -delete
fi
echo "$out"
echo "$ref"
