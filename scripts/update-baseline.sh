#!/usr/bin/env bash
# Migrates an empty database through the numbered migrations and writes what they built to
# migrations/baseline/, the schema new databases are made from and the one under review (see
# Sources/TestSupport/BaselineDump.swift). Run it after adding a migration, and commit the diff
# with it.
set -euo pipefail
cd "$(dirname "$0")/.."
LIVELINE_UPDATE_BASELINE=1 swift test --filter BaselineTests
git status --short -- migrations/baseline
