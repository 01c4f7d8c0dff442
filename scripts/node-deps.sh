#!/usr/bin/env bash
# Installs tests/node's pinned npm packages (the TypeScript MCP SDK) into tests/node/node_modules
# with `npm ci`. Re-runs are quiet no-ops until package-lock.json changes.
set -euo pipefail

dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../tests/node" && pwd)"
stamp="$dir/node_modules/.package-lock.sha256"

for tool in node npm; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "node-deps: $tool not found; install Node.js 18 or newer to run the TypeScript client tests" >&2
        exit 1
    fi
done

want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi

echo "node-deps: installing tests/node/package-lock.json into $dir/node_modules" >&2
(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
echo "$want" >"$stamp"
