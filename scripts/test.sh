#!/usr/bin/env bash
# The whole test suite, as README command 2 and CI run it:
#   1. installs what the tests need from Debian's packages when missing
#      (the Apache ZooKeeper server, a Java runtime, Chromium for the on-call page test),
#   2. checks formatting and runs go vet,
#   3. starts one shared ZooKeeper server on a free loopback port (tests that stop or
#      restart ZooKeeper start their own), builds the hotpair binary,
#   4. runs go test -race over every package,
#   5. runs the deploy module's checks (deploy/: its own go.mod, heavy
#      libraries) without -race: they check files and drive the built binary
#      as a child process, so the race detector would only slow their
#      compilation (k8s.io, kustomize, Prometheus) and find nothing of ours,
#   6. stops what it started, whatever the outcome.
# Extra arguments go to go test of the main module only (e.g. -run TestX ./pipeline).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "not gofmt-ed:"; echo "$unformatted"; exit 1; fi

echo "== go vet"
go vet ./...
(cd deploy && go vet ./...)

work=$(mktemp -d)
zkpid=""
cleanup() {
  if [ -n "$zkpid" ]; then kill "$zkpid" 2>/dev/null || true; wait "$zkpid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "== build"
go build -o "$work/hotpair" ./cmd/hotpair
export HOTPAIR_BIN="$work/hotpair"

echo "== shared ZooKeeper"
"$work/hotpair" zookeeper --dir "$work/zk" --addr-file "$work/zk.json" >"$work/zk.out" 2>&1 &
zkpid=$!
for _ in $(seq 1 300); do
  [ -s "$work/zk.json" ] && break
  kill -0 "$zkpid" 2>/dev/null || { cat "$work/zk.out"; exit 1; }
  sleep 0.1
done
HOTPAIR_TEST_ZK=$(sed -e 's/.*"zk":"\([^"]*\)".*/\1/' "$work/zk.json")
export HOTPAIR_TEST_ZK
echo "ZooKeeper at $HOTPAIR_TEST_ZK"

echo "== go test -race"
narrow=$#
if [ $# -eq 0 ]; then set -- ./...; fi
go test -race -timeout 14m "$@"

if [ "$narrow" -eq 0 ]; then
  echo "== deploy checks (deploy/, without -race)"
  (cd deploy && go test -timeout 10m ./...)
fi
