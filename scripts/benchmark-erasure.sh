#!/usr/bin/env bash
# Erasing one device whose activities lie in sealed archives (#59): writes a log of EVENTS events
# in bulk (activities of ten events over every partition of the log, one in SPREAD the device's),
# builds its projection, retires it all into sealed archives, erases the device through the store,
# and reports the erasure's time, that no archive file changed and what the keys take; then erases
# activities one at a time (a puncture of the key tree each). Starts its own PostgreSQL
# cluster (default durability) and removes it afterwards. Release build. Figures go to
# BENCHMARKS.md.
#   scripts/benchmark-erasure.sh [--events 10000000] [--spread 10000] [--varied-content] [--erase-activities 100]
set -euo pipefail
cd "$(dirname "$0")/../Benchmarks"

swift build -c release --product ErasureBenchmark
exec "$(swift build -c release --show-bin-path)/ErasureBenchmark" --migrations ../migrations "$@"
