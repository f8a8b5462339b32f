#!/usr/bin/env bash
# Writes the schema of a freshly migrated database to migrations/snapshot/schema.sql (pg_dump
# --schema-only, normalised: see Sources/TestSupport/SchemaSnapshot.swift). Run it after changing
# a migration or a function definition, and commit the diff with the change.
set -euo pipefail
cd "$(dirname "$0")/.."
LIVELINE_UPDATE_SNAPSHOT=1 swift test --filter SchemaSnapshotTests
git --no-pager diff --stat -- migrations/snapshot/schema.sql
