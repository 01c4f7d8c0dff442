#!/usr/bin/env bash
# Creates .venv at the repository root (if missing) and installs tests/python/requirements.txt
# into it. Re-runs are quiet no-ops until the requirements file changes.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$repo/.venv"
requirements="$repo/tests/python/requirements.txt"
stamp="$venv/.requirements.sha256"

python="${PYTHON:-python3}"
if ! command -v "$python" >/dev/null 2>&1; then
    echo "python-venv: $python not found; install Python 3.10+ (with the venv module) to run the Python client tests" >&2
    exit 1
fi

if [ ! -x "$venv/bin/python" ]; then
    echo "python-venv: creating $venv" >&2
    "$python" -m venv "$venv"
fi

want="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi

echo "python-venv: installing $(basename "$requirements") into $venv" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$requirements"
echo "$want" >"$stamp"
