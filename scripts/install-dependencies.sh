#!/usr/bin/env bash
# Installs what a fresh Debian/Ubuntu machine lacks to build, run and test Liveline:
# libpq (headers and pkg-config), zlib's headers (archives are gzip), the PostgreSQL server
# programs (initdb, pg_ctl) for the embedded database, docker-compose (to validate docker-compose.yml offline), curl (the quick
# start's first request, which a test runs as printed), Python's venv (scripts/fuzz-api.sh
# installs schemathesis from PyPI into one), and chromium with its driver and Selenium (the
# support console's browser test, scripts/console-browser-test.py).
# Swift itself is expected on PATH (https://www.swift.org/install/linux/).
# Does nothing when everything is present; safe to run again.
set -euo pipefail

packages=(libpq-dev pkg-config zlib1g-dev postgresql postgresql-contrib docker-compose curl python3-venv chromium
    chromium-driver python3-selenium)

missing=()
for package in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$package")
    fi
done

if ((${#missing[@]} > 0)); then
    echo "installing: ${missing[*]}"
    sudo=""
    if [[ $(id -u) -ne 0 ]]; then
        sudo="sudo"
    fi
    $sudo apt-get update -qq
    # The postgresql package would start a system-wide cluster where a service manager runs;
    # Liveline does not use it (it starts its own), so keep the install from starting services.
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v swift >/dev/null 2>&1; then
    echo "swift is not on PATH: install Swift 6.3 (https://www.swift.org/install/linux/)" >&2
    exit 1
fi
