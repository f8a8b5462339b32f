#!/usr/bin/env bash
# The event store's append path against pgbench running the same SQL, and opening activities
# with every cap enforced against plain appends, beside pgbench running the SQL of an opening. Starts its own PostgreSQL cluster (default
# durability) and removes it afterwards. Release build. Figures go to BENCHMARKS.md.
#   scripts/benchmark-append.sh [--clients 8] [--writers N] [--seconds 10] [--rounds 2]
set -euo pipefail
cd "$(dirname "$0")/../Benchmarks"

swift build -c release --product AppendBenchmark
exec "$(swift build -c release --show-bin-path)/AppendBenchmark" --migrations ../migrations "$@"
