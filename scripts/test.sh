#!/usr/bin/env bash
# The test command of the README, and what CI runs: installs what is missing, checks the
# formatting and docker-compose.yml, builds without warnings, runs every test against a
# throwaway PostgreSQL cluster that the tests start themselves (or DATABASE_URL when set), fuzzes
# the HTTP API against its OpenAPI document, and checks that the benchmarks still build.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-dependencies.sh
scripts/check-format.sh
scripts/check-compose.sh

# build ARGUMENTS...: builds; warnings in our own code fail the build, dependencies' are theirs.
log=$(mktemp)
tests_log=$(mktemp)
trap 'rm -f "$log" "$tests_log"' EXIT
build() {
    swift build "$@" 2>&1 | tee "$log" | grep -E "error:|Build complete" || true
    if grep -E "^$PWD/(Sources|Tests|Benchmarks/[^./][^/]*)/.*(warning|error):" "$log" | sort -u | grep .; then
        echo "the build has warnings or errors in Sources/, Tests/ or Benchmarks/" >&2
        exit 1
    fi
    if ! grep -q "Build complete" "$log"; then
        echo "the build failed" >&2
        exit 1
    fi
}

build --build-tests
# The suite takes a few minutes; one that hangs is stopped after LIVELINE_TEST_TIMEOUT (30m), and
# the tests that started and never finished are named.
status=0
timeout --kill-after=30s "${LIVELINE_TEST_TIMEOUT:-30m}" swift test --skip-build "$@" 2>&1 | tee "$tests_log" ||
    status=$?
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    echo "swift test did not finish within ${LIVELINE_TEST_TIMEOUT:-30m}; started and never finished:" >&2
    sed -n 's/^◇ Test \(.*\) started\.$/\1/p' "$tests_log" | sort -u | while IFS= read -r name; do
        grep -qF -e "✔ Test $name passed" -e "✘ Test $name failed" -e "➜ Test $name skipped" "$tests_log" || echo "  $name" >&2
    done
fi
[ "$status" -eq 0 ] || exit "$status"
# The HTTP API against its OpenAPI document, with every check schemathesis has (a few minutes;
# stopped after 20 should it hang).
timeout --kill-after=30s 20m scripts/fuzz-api.sh --max-examples 20
# The benchmarks are a package of their own (Benchmarks/), so that testing does not build their
# harness; they must still build against the code they measure.
build --package-path Benchmarks
