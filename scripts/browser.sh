#!/usr/bin/env bash
# The browser tests drive Debian's Chromium through Playwright (executable_path): install it when
# missing. Playwright never downloads a browser of its own here.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" -ne 0 ]; then
    echo "browser: chromium is missing; install Debian's chromium package (the browser tests will be skipped)" >&2
    exit 0
fi
echo "browser: installing Debian's chromium for the browser tests" >&2
apt-get update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
