#!/usr/bin/env bash
# Creates (or reuses) a Python venv at target/py with tests/python/requirements.txt
# installed, for the cross-check with the official Python MCP SDK (tests/it/python_client.rs).
# Idempotent: reinstalls only when the requirements changed or the venv is broken.
# Quiet on success; prints only the venv's interpreter path.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/target/py"
req="$root/tests/python/requirements.txt"
py="$venv/bin/python"
stamp="$venv/.requirements.sha256"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT

want="$(sha256sum "$req" | cut -d' ' -f1)"
if [[ -x "$py" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]] && "$py" -c 'import mcp' >/dev/null 2>&1; then
    echo "$py"
    exit 0
fi

run() {
    if ! "$@" >"$log" 2>&1; then
        echo "python-env: failed: $*" >&2
        cat "$log" >&2
        exit 1
    fi
}

mkdir -p "$root/target"
if ! "$py" -c 'import sys' >/dev/null 2>&1; then
    rm -rf "$venv"
    run python3 -m venv "$venv"
fi
rm -f "$stamp"
run "$py" -m pip install --quiet --disable-pip-version-check --no-input -r "$req"
run "$py" -c 'import mcp'
echo "$want" >"$stamp"
echo "$py"
