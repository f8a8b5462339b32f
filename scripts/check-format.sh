#!/usr/bin/env bash
# Fails when a Swift file is not formatted as the committed .swift-format says.
# To fix: swift format --in-place --recursive --parallel Package.swift Sources Tests Benchmarks/Package.swift Benchmarks/Benchmarks Benchmarks/AppendBenchmark Benchmarks/DeadlineBenchmark Benchmarks/BenchmarkSupport
set -euo pipefail
cd "$(dirname "$0")/.."

swift format lint --strict --recursive --parallel Package.swift Sources Tests Benchmarks/Package.swift Benchmarks/Benchmarks Benchmarks/AppendBenchmark Benchmarks/DeadlineBenchmark Benchmarks/BenchmarkSupport
echo "format: ok"
