#!/usr/bin/env bash
# Installs the Debian packages some tests need, where they are missing:
#   chromium  - tests/test_reports_render.py renders the HTML report headless
#   nftables  - tests/test_network.py drops packets of namespace hosts
# Idempotent and never fatal: a machine where it cannot install skips those tests.
set -u

want=()
[ -x /usr/bin/chromium ] || want+=(chromium)
command -v nft >/dev/null 2>&1 || want+=(nftables)
[ ${#want[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "setup-system: no root apt-get for ${want[*]}; the tests that need them will skip" >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq && apt-get install -y -qq "${want[@]}"; } >/dev/null 2>&1; then
    echo "setup-system: apt-get could not install ${want[*]}; the tests that need them will skip" >&2
fi
exit 0
