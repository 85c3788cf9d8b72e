#!/usr/bin/env bash
# Enforces the layer table of DESIGN.md: dependencies flow down, never up.
set -euo pipefail
mod=$(go list -m)
fail=0
deny() { # package, forbidden import pattern, reason
  local pkg=$1 pat=$2 why=$3
  [ -d "${pkg#./}" ] || return 0
  local bad
  bad=$(go list -deps "$pkg" 2>/dev/null | grep -E "$pat" || true)
  if [ -n "$bad" ]; then
    echo "$pkg must not import ($why):"; echo "$bad" | sed 's/^/  /'; fail=1
  fi
}
# engine: the standard library only.
bad=$(go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' ./engine | grep -v "^$mod/engine" || true)
if [ -n "$bad" ]; then echo "engine must import the standard library only:"; echo "$bad" | sed 's/^/  /'; fail=1; fi
deny ./fsm "^google.golang.org/grpc|^$mod/(rpc|cluster|client|cmd)" "fsm knows nothing of gRPC or the layers above it"
deny ./cluster "^$mod/(rpc|client|cmd)" "cluster sits below rpc"
deny ./client "^$mod/(engine|fsm|cluster|rpc|cmd)|hashicorp/raft" "the SDK pulls in no server code"
# engine and fsm never read the clock or a random source.
if grep -rnE 'time\.Now\(|time\.Since\(|math/rand|crypto/rand' --include='*.go' --exclude='*_test.go' engine fsm 2>/dev/null; then
  echo "engine/ and fsm/ must not read the wall clock or a random source"; fail=1
fi
exit $fail
