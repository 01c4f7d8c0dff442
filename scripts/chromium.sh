#!/usr/bin/env bash
# Installs Debian's headless Chromium and its WebDriver (chromium, chromium-driver) when
# either is missing; the approval-page browser tests drive the page through them.
set -euo pipefail

if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
        echo "chromium: chromium and chromium-driver are missing, and installing them needs root (or sudo)" >&2
        exit 1
    fi
    sudo="sudo"
fi

echo "chromium: installing chromium and chromium-driver" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium chromium-driver >/dev/null
command -v chromium >/dev/null && command -v chromedriver >/dev/null
