#!/usr/bin/env bash
# make browser: Debian's Chromium and ChromeDriver for the web view's browser tests
# (tests/test_web_browser.py drives /usr/bin/chromium with Playwright). Installs them with
# apt-get when /usr/bin/chromium is missing: as root, or through `sudo -n` when that works.
# Exit 0 when Chromium is there afterwards; 1, with one line saying why, when it is not.
set -uo pipefail
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "make browser: no apt-get here: install Chromium at /usr/bin/chromium by hand" >&2
    exit 1
fi
as_root=()
if [ "$(id -u)" -ne 0 ]; then
    if sudo -n true 2>/dev/null; then
        as_root=(sudo -n)
    else
        echo "make browser: not root and no password-less sudo: run 'sudo apt-get install chromium chromium-driver'" >&2
        exit 1
    fi
fi
packages=(chromium chromium-driver)
echo "make browser: apt-get install ${packages[*]}" >&2
if ! "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null; then
    "${as_root[@]}" apt-get update -qq >/dev/null &&
        "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
fi
if [ ! -x /usr/bin/chromium ]; then
    echo "make browser: apt-get could not install chromium: the browser tests will fail" >&2
    exit 1
fi
