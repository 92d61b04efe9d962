#!/usr/bin/env bash
# Installs, from Debian's packages, what hotpair's sandbox and tests run beside
# Go: the Apache ZooKeeper server, a Java runtime for it, Chromium for the
# on-call page test, promtool (package prometheus) for the alert rules' unit
# tests, and kcat, which a test points at the secure sandbox as an operator
# would. Does nothing when they are present.
set -euo pipefail
need=()
command -v java >/dev/null 2>&1 || need+=(default-jre-headless)
[ -f /usr/share/java/zookeeper.jar ] || need+=(zookeeper)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
command -v kcat >/dev/null 2>&1 || need+=(kcat)
if [ "${HOTPAIR_SKIP_CHROMIUM:-}" = "" ]; then
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
fi
[ ${#need[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
echo "installing ${need[*]} (apt-get)"
export DEBIAN_FRONTEND=noninteractive
if ! $sudo apt-get install -y -qq "${need[@]}" >/dev/null; then
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq "${need[@]}" >/dev/null || {
    echo "could not install: ${need[*]}; run: sudo apt-get update && sudo apt-get install -y ${need[*]}" >&2
    exit 1
  }
fi
