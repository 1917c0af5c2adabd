#!/usr/bin/env bash
# Installs headless Chromium for tests/test_reports_render.py, which skips without it.
# Idempotent and never fatal: a machine where it cannot install simply skips that test.
set -u

if [ -x /usr/bin/chromium ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "setup-browser: no /usr/bin/chromium and no root apt-get; the browser test will skip" >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq && apt-get install -y -qq chromium; } >/dev/null 2>&1; then
    echo "setup-browser: apt-get could not install chromium; the browser test will skip" >&2
fi
exit 0
