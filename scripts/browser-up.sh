#!/usr/bin/env bash
# The report tests open pages in headless Chromium: Debian's package (playwright-core drives
# it; it never downloads a browser of its own). Installed when missing, as root.
set -euo pipefail
command -v chromium >/dev/null 2>&1 && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "browser-up: chromium is missing; install Debian's chromium package (as root)" >&2
  exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
command -v chromium >/dev/null
