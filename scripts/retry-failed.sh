#!/usr/bin/env bash
# retry-failed.sh DIR GO-TEST-ARGS...: go test in DIR; the top-level tests
# that fail are run once more, alone, and only a second failure fails.
#
# For upstream suites (make raft-fork) full of timing-bound tests: on a
# shared 2-core machine some of them miss a wall-clock bound now and then,
# patched or not (third_party/hashicorp/raft/SEPP-PATCH.md), and pass when run
# again. Every retry is printed, so a test that keeps needing one is seen.
set -uo pipefail
dir=$1
shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
(cd "$dir" && go test "$@" 2>&1) | tee "$out"
status=${PIPESTATUS[0]}
((status == 0)) && exit 0
failed=$(grep -oE '^--- FAIL: [^ ]+' "$out" | awk '{print $3}' | grep -v / | sort -u | paste -sd'|' -)
if [[ -z $failed ]] || grep -qE '^(panic:|FAIL	.*\[build failed\])' "$out"; then
  echo "retry-failed: no test to retry (a panic, a build failure or a timeout): failing" >&2
  exit "$status"
fi
echo "retry-failed: retrying once, alone: $failed" >&2
# The same arguments, with -run narrowed to the failed tests (a later -run wins).
(cd "$dir" && go test "$@" -run "^($failed)\$")
