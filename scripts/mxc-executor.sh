#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Fetch (or reuse) Microsoft MXC's Linux executor, lxc-exec, for the mxc
# backend's tests: `npm pack` of the pinned @microsoft/mxc-sdk (never
# `npm install`: the package wants Node >= 24 and builds node-pty), its
# integrity checked against the registry's dist.integrity pinned below, and
# bin/x64/lxc-exec unpacked into a cache outside the repository keyed by the
# version and that integrity. A second run only checks the cached file.
#
#   scripts/mxc-executor.sh        prints the executor's path as its last line
#
# LLM_SANDBOX_CACHE (default /var/cache/llm-sandbox) holds the cache; the
# executor lands in $LLM_SANDBOX_CACHE/mxc/<version>-<sha512 prefix>/x64/,
# the layout MXC's SDK knows as MXC_BIN_DIR (<dir>/<arch>/lxc-exec). The
# plugin never downloads anything: point LLM_SANDBOX_MXC_BIN_DIR (or
# MXC_BIN_DIR) at the printed path's grandparent, or LLM_SANDBOX_MXC_EXECUTOR
# at the path itself.
set -eu

VERSION=1.0.1
INTEGRITY=sha512-2cP925G5+lQyKzjBVha8uNtVd7XESgDBtgi1yCYYSo9M3xiFyZWtCO4SWPGTk509rdI6nqjyGcZxvEP3t6l8Hg==
# The executor's own SHA-256 inside that tarball, checked on every use (the
# cache may be shared with other checkouts).
EXEC_SHA256=5bd6bdf45bc6c0ecc9bccf372762b571de1f468142c4b2ff80fdb4c540922f26
TOP=${LLM_SANDBOX_CACHE:-/var/cache/llm-sandbox}

case $(uname -m) in
    x86_64) ARCH=x64 ;;
    aarch64) ARCH=arm64 ;;
    *) echo "mxc-executor: MXC ships no Linux executor for $(uname -m)" >&2; exit 1 ;;
esac

hex=$(printf '%s' "${INTEGRITY#sha512-}" | base64 -d | od -An -v -tx1 | tr -d ' \n')
dir="$TOP/mxc/$VERSION-$(printf '%s' "$hex" | cut -c1-16)"
exe="$dir/$ARCH/lxc-exec"

if [ -x "$exe" ] && [ -s "$dir/$ARCH/lxc-exec.sha256" ] &&
    (cd "$dir/$ARCH" && sha256sum -c --status lxc-exec.sha256); then
    echo "$exe"
    exit 0
fi
command -v npm >/dev/null 2>&1 || {
    echo "mxc-executor: npm is missing (Debian's npm package)" >&2
    exit 1
}
mkdir -p "$TOP/mxc"
work=$(mktemp -d "$TOP/mxc/.fetch.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "mxc-executor: npm pack @microsoft/mxc-sdk@$VERSION (38 MB, once)" >&2
(cd "$work" && npm pack --silent --cache "$work/npm-cache" "@microsoft/mxc-sdk@$VERSION" \
    >"$work/name" 2>"$work/log") || {
    cat "$work/log" >&2
    echo "mxc-executor: npm pack failed" >&2
    exit 1
}
tgz="$work/$(tail -n 1 "$work/name")"
got=$(sha512sum "$tgz" | cut -d' ' -f1)
if [ "$got" != "$hex" ]; then
    echo "mxc-executor: the tarball does not match $INTEGRITY (got sha512 $got)" >&2
    exit 1
fi
tar -xzf "$tgz" -C "$work" "package/bin/$ARCH/lxc-exec"
mkdir -p "$work/out/$ARCH"
install -m 0755 "$work/package/bin/$ARCH/lxc-exec" "$work/out/$ARCH/lxc-exec"
(cd "$work/out/$ARCH" && sha256sum lxc-exec >lxc-exec.sha256)
if [ -n "$EXEC_SHA256" ] && ! (cd "$work/out/$ARCH" &&
    echo "$EXEC_SHA256  lxc-exec" | sha256sum -c --status); then
    echo "mxc-executor: lxc-exec does not have the expected SHA-256" >&2
    exit 1
fi
chmod 0755 "$work/out"
rm -rf "$dir"
mv "$work/out" "$dir"
echo "$exe"
