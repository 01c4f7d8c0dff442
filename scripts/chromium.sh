#!/usr/bin/env bash
# Installs Debian's headless Chromium and its WebDriver (chromium, chromium-driver) when
# either is missing; the approval-page browser tests drive the page through them. Tests run
# it concurrently, so one caller installs while the others wait on a lock, then find both.
set -euo pipefail

present() { command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; }
present && exit 0

exec 9>"${TMPDIR:-/tmp}/guard-chromium-install.lock"
flock 9
present && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
        echo "chromium: chromium and chromium-driver are missing, and installing them needs root (or sudo)" >&2
        exit 1
    fi
    sudo="sudo"
fi

echo "chromium: installing chromium and chromium-driver" >&2
# Another apt run (not ours) may hold dpkg's lock for a while: wait for it rather than fail.
apt=(apt-get -o DPkg::Lock::Timeout=600)
$sudo "${apt[@]}" update -qq
DEBIAN_FRONTEND=noninteractive $sudo "${apt[@]}" install -y -qq chromium chromium-driver >/dev/null
present
