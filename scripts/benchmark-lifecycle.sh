#!/usr/bin/env bash
# Measures the state machine: strict folds (events/s through evolve) and decisions
# (commands/s through decide), release build, with ordo-one/benchmark.
# Figures go to BENCHMARKS.md with this command and the machine.
set -euo pipefail
cd "$(dirname "$0")/../Benchmarks"

swift package --disable-sandbox benchmark --target LifecycleBenchmarks --no-progress "$@"
