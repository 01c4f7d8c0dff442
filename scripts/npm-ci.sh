#!/usr/bin/env bash
# Installs one test folder's pinned npm packages into its node_modules with `npm ci`:
# `scripts/npm-ci.sh <label> <folder> <what needs them>`. Re-runs are quiet no-ops until the
# folder's package-lock.json changes (a stamp in node_modules records the lock's digest).
set -euo pipefail

label="$1"
dir="$(cd "$2" && pwd)"
needed_for="$3"
stamp="$dir/node_modules/.package-lock.sha256"

if ! command -v npm >/dev/null 2>&1; then
    echo "$label: npm not found; install Node.js and npm to run $needed_for" >&2
    exit 1
fi

want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi

echo "$label: installing $2/package-lock.json into $dir/node_modules" >&2
(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
echo "$want" >"$stamp"
