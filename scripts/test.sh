#!/usr/bin/env bash
# The test command of the README, and what CI runs: installs what is missing, checks the
# formatting and docker-compose.yml, builds without warnings, and runs every test against a
# throwaway PostgreSQL cluster that the tests start themselves (or DATABASE_URL when set).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-dependencies.sh
scripts/check-format.sh
scripts/check-compose.sh

# Warnings in our own code fail the build; dependencies' warnings are theirs.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
swift build --build-tests 2>&1 | tee "$log" | grep -E "error:|Build complete" || true
if grep -E "^$PWD/(Sources|Tests)/.*(warning|error):" "$log" | sort -u | grep .; then
    echo "the build has warnings or errors in Sources/ or Tests/" >&2
    exit 1
fi
if ! grep -q "Build complete" "$log"; then
    echo "the build failed" >&2
    exit 1
fi

swift test --skip-build "$@"
