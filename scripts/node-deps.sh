#!/usr/bin/env bash
# Installs tests/node's pinned npm packages (the TypeScript MCP SDK) into tests/node/node_modules
# with `npm ci`. Re-runs are quiet no-ops until package-lock.json changes.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if ! command -v node >/dev/null 2>&1; then
    echo "node-deps: node not found; install Node.js 18 or newer to run the TypeScript client tests" >&2
    exit 1
fi
exec "$root/scripts/npm-ci.sh" node-deps "$root/tests/node" "the TypeScript client tests"
