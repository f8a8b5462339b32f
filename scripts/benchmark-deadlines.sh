#!/usr/bin/env bash
# 100,000 stale dates coming due over a minute, applied by one deadline worker on the real clock;
# reports how far behind their due times they were recorded. Starts its own PostgreSQL cluster
# (default durability) and removes it afterwards. Release build. Figures go to BENCHMARKS.md.
#   scripts/benchmark-deadlines.sh [--activities 100000] [--window 60]
set -euo pipefail
cd "$(dirname "$0")/../Benchmarks"

swift build -c release --product DeadlineBenchmark
exec "$(swift build -c release --show-bin-path)/DeadlineBenchmark" --migrations ../migrations "$@"
