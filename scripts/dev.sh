#!/usr/bin/env bash
# The quick start: installs what is missing, then runs `liveline dev` — a private PostgreSQL
# under .liveline/, migrated, and the HTTP API on http://127.0.0.1:8080. Ctrl-C stops both.
# Arguments are passed to `liveline dev` (see `swift run liveline dev --help`).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-dependencies.sh
swift build --product liveline
exec .build/debug/liveline dev "$@"
