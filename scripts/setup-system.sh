#!/usr/bin/env bash
# Installs the Debian packages some tests need, where they are missing:
#   chromium  - tests/test_reports_render.py renders the HTML report headless
#   nftables  - tests/test_network.py drops packets of namespace hosts
# Idempotent and never fatal: a machine where it cannot install skips those tests.
# It says what it installs, as root, before it does; FTHARNESS_NO_SYSTEM=1 installs nothing.
set -u

want=()
[ -x /usr/bin/chromium ] || want+=(chromium)
command -v nft >/dev/null 2>&1 || want+=(nftables)
[ ${#want[@]} -eq 0 ] && exit 0
if [ "${FTHARNESS_NO_SYSTEM:-}" = "1" ]; then
    echo "setup-system: FTHARNESS_NO_SYSTEM=1: not installing ${want[*]}; the tests that need them will skip" >&2
    exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "setup-system: no root apt-get for ${want[*]}; the tests that need them will skip" >&2
    exit 0
fi
echo "setup-system: installing ${want[*]} with apt-get as root (chromium: the report rendered headless;" \
     "nftables: network faults between namespace hosts); FTHARNESS_NO_SYSTEM=1 skips this" >&2
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq && apt-get install -y -qq "${want[@]}"; } >/dev/null 2>&1; then
    echo "setup-system: apt-get could not install ${want[*]}; the tests that need them will skip" >&2
fi
exit 0
