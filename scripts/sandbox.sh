#!/usr/bin/env bash
# README command 1: the whole system in one process on the embedded defaults.
# Installs the ZooKeeper server package when missing, then runs `hotpair sandbox`.
# Extra arguments go to `hotpair sandbox` (e.g. --scenario failover).
set -euo pipefail
cd "$(dirname "$0")/.."
HOTPAIR_SKIP_CHROMIUM=1 scripts/install-deps.sh
exec go run ./cmd/hotpair sandbox "$@"
