# shellcheck shell=bash
# Sourced by .ci/run (`. scripts/ci/chromium.sh`): makes sure Debian's Chromium and its driver are
# installed for the browser tests of the web page (tests/ui/), then exports
# MEMWIRE_REQUIRE_BROWSER=1 so those tests FAIL, not skip, if the browser is still missing.
# Idempotent: when both are installed it only checks them (well under a second). Selenium itself
# comes with the test extras (requirements-dev.txt); no browser or driver is ever downloaded by it.

memwire_chromium() {
    if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
        return 0
    fi
    local sudo=""
    if [ "$(id -u)" != "0" ]; then sudo="sudo"; fi
    echo "scripts/ci/chromium.sh: installing chromium and chromium-driver (Debian packages)"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
        chromium chromium-driver >/dev/null
}

memwire_chromium
chromium --version 2>/dev/null
chromedriver --version
export MEMWIRE_REQUIRE_BROWSER=1
unset -f memwire_chromium
