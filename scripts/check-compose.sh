#!/usr/bin/env bash
# Validates docker-compose.yml without a Docker engine (Debian's docker-compose checks offline).
set -euo pipefail
cd "$(dirname "$0")/.."

docker-compose -f docker-compose.yml config -q
echo "docker-compose.yml: ok"
