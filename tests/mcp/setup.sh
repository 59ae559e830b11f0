#!/bin/sh
# SPDX-License-Identifier: MIT
#
# setup.sh: install the MCP test clients pinned in package-lock.json (the
# MCP Inspector, the TypeScript SDK, the conformance suite and Node.js 22
# from npm's `node` package) into tests/mcp/node_modules, with `npm ci`,
# only when the lockfile (or package.json, or this script) changed since
# the last install: a stamp in node_modules remembers what was installed.
# Idempotent and quick when nothing changed; safe to run twice at once
# (the second waits for the first).
#
# The npm cache lives outside the repository, so CI runs on a fresh clone
# hit it: $XDG_CACHE_HOME/npm when XDG_CACHE_HOME is set, else npm's own
# default (~/.npm).
#
# Prints progress on stderr and, as its only line on stdout, the path of
# the Node.js 22 binary the tests run with.
#
# Runs with Debian 12's own npm (9.2) and Node.js (18), which is what a
# fresh machine has (scripts/fresh-check.sh checks it there): package.json
# must stay readable by npm 9 (no `overrides` pointing at a `file:`
# dependency: npm 9 reads that spec as a semver range and refuses the
# lockfile), and only Node.js 22 from the lockfile runs the clients.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
modules="$here/node_modules"
node22="$modules/node/bin/node"
stamp="$modules/.llm-sandbox-setup"

say() { printf 'mcp setup: %s\n' "$*" >&2; }

command -v npm >/dev/null 2>&1 || {
    say "npm is not installed (Debian: apt-get install npm; this machine's Node.js ships it)"
    exit 1
}
if [ -n "${XDG_CACHE_HOME:-}" ]; then
    npm_config_cache="$XDG_CACHE_HOME/npm"
    export npm_config_cache
fi

# What the install depends on; a change to any of it reinstalls.
want=$(cat package.json package-lock.json setup.sh | sha256sum | cut -d' ' -f1)

node_ok() {
    [ -x "$node22" ] && "$node22" -e \
        'process.exit(Number(process.versions.node.split(".")[0]) === 22 ? 0 : 1)' 2>/dev/null
}

# One installer at a time: lock this script's own file (no lock file to
# clean up), then look again, since another run may have just finished.
exec 9<"$here/setup.sh"
flock 9
if [ "$(cat "$stamp" 2>/dev/null || true)" = "$want" ] && node_ok; then
    say "up to date ($(${node22} --version))"
else
    say "installing the pinned clients with npm ci (npm $(npm --version), Node.js $(node --version 2>/dev/null || echo none)) from $(npm config get registry) (cache: ${npm_config_cache:-$HOME/.npm})"
    start=$(date +%s)
    # --prefer-offline: what the cache holds is used without asking the
    # registry; the lockfile's integrity hashes pin every package anyway.
    if ! npm ci --prefer-offline --no-audit --no-fund --loglevel=error >&2; then
        say "npm ci failed"
        exit 1
    fi
    if ! node_ok; then
        say "npm ci finished but $node22 is not a working Node.js 22"
        exit 1
    fi
    printf '%s\n' "$want" >"$stamp"
    say "installed in $(($(date +%s) - start)) s ($(${node22} --version))"
fi
printf '%s\n' "$node22"
