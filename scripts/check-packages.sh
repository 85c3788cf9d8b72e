#!/usr/bin/env bash
# check-packages.sh [PACKAGES] [SEPP_BIN] [LANGUAGE]
#
# Installs each SDK package as a user would, into a fresh, empty project in
# a temporary folder, and runs there what the SDK promises (make
# check-packages runs it after make packages; PACKAGES defaults to
# dist/packages, SEPP_BIN to bin/sepp; LANGUAGE, one of python,
# typescript, rust and go, checks that one alone):
#
#   Python      a venv (--system-site-packages: grpcio, protobuf, pytest and
#               pytest-asyncio are Debian's) that pip installs the wheel into,
#               offline; another that builds and installs the sdist
#   TypeScript  a new npm project that installs the tarball, offline; tsc
#               compiles the samples and the example against the installed
#               package's types (node16 resolution, its exports map)
#   Rust        a new cargo project that depends on the unpacked .crate by
#               path, offline against Debian's registry (as sdk/rust does)
#   Go          a new module that requires github.com/sepp-io/sepp with a
#               replace to this checkout, no proxy (GOPROXY=off)
#
# In each: the spec pages' samples of that language, verbatim (as the SDK's
# own tests hold them), against `sepp serve` with every default
# (localhost:50051), then a check of what they enqueued; and the SDK's
# example test written with its test helper (pytest's sepp_server fixture,
# sepp/testing's startServer, the testing feature's TestServer,
# client/sepptest), which starts servers of its own on free ports. The spec
# pages have no Go samples: the Go module runs the Go examples
# (client/example_test.go and client/sepptest/example_test.go).
#
# The samples name localhost:50051, so the script runs in a network
# namespace of its own (unshare -n, as root; unshare -rn otherwise), where
# that port is free and nothing reaches the network: every install is
# offline. Without unshare the samples are skipped. A language whose
# toolchain or package is missing is skipped with the reason printed; with
# SEPP_REQUIRE_ALL=1 (CI) every skip is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

packages=$(cd "${1:-dist/packages}" && pwd)
bin=$(cd "$(dirname "${2:-bin/sepp}")" && pwd)/$(basename "${2:-bin/sepp}")
PYTHON=${PYTHON:-/usr/bin/python3}
RUST_PATH=${RUST_PATH:-/usr/bin:$PATH}
GO=${GO:-go}

if [[ -z ${SEPP_CHECK_NETNS:-} ]]; then
  scripts/check-versions.sh
  [[ -x $bin ]] || { echo "check-packages: no sepp binary at $bin (make build)" >&2; exit 1; }
  # Go's caches are outside the namespace's reach only for downloads;
  # resolve them here, where `go env` may still write its defaults.
  GOMODCACHE=$("$GO" env GOMODCACHE) GOCACHE=$("$GO" env GOCACHE)
  export GOMODCACHE GOCACHE
  # Root gets a plain network namespace; anyone else a user namespace too.
  ns=-n
  [[ $(id -u) == 0 ]] || ns=-rn
  if command -v unshare >/dev/null 2>&1 && command -v ip >/dev/null 2>&1 && unshare "$ns" true 2>/dev/null; then
    exec unshare "$ns" env SEPP_CHECK_NETNS=1 "$0" "$packages" "$bin" ${3:+"$3"}
  fi
  export SEPP_CHECK_NETNS=none
fi

version=$(tr -d '[:space:]' <VERSION)
export SEPP_BIN=$bin
only=${3:-}
tmp=$(mktemp -d)
server_pid=
cleanup() {
  if [[ -n $server_pid ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# One line per outcome, printed at the end. Each language runs as a process
# of its own (this script again, SEPP_CHECK_RESULTS set and the language as
# the third argument), so that set -e holds in it.
child=0
if [[ -n ${SEPP_CHECK_RESULTS:-} && -n $only ]]; then
  child=1
else
  SEPP_CHECK_RESULTS=$tmp/results
  export SEPP_CHECK_RESULTS
  : >"$SEPP_CHECK_RESULTS"
fi
note() { echo "$1" >>"$SEPP_CHECK_RESULTS"; }
skip() {
  if [[ ${SEPP_REQUIRE_ALL:-} == 1 ]]; then
    echo "check-packages: $1 (SEPP_REQUIRE_ALL=1: failing instead of skipping)" >&2
    note "FAIL  $1"
    exit 1
  fi
  echo "check-packages: SKIPPED $1" >&2
  note "SKIP  $1"
}

samples_ok=0
if [[ $SEPP_CHECK_NETNS == 1 ]]; then
  samples_ok=1
  ((child)) || ip link set lo up
elif ((!child)); then
  (skip "every language's spec samples: no private network namespace (unshare -n, and ip from iproute2) for a sepp serve on localhost:50051") || exit 1
fi

# Starts `sepp serve` with every default but the data dir (a fresh one),
# waits for its /readyz.
start_serve() {
  local d
  d=$(mktemp -d "$tmp/serve.XXXX")
  "$bin" serve --data-dir "$d/data" >"$d/log" 2>&1 &
  server_pid=$!
  for _ in $(seq 300); do
    if "$bin" probe --timeout 1s http://127.0.0.1:8080/readyz >/dev/null 2>&1; then return 0; fi
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "check-packages: sepp serve did not become ready:" >&2
  tail -n 30 "$d/log" >&2
  return 1
}

stop_serve() {
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=
}

# What the two priority-and-scheduling samples must have left on the
# server: emails holds one Ready password_reset at priority 9, reports one
# daily_rollup Scheduled about an hour from now.
check_spec_jobs() {
  "$bin" jobs list emails --state ready --json >"$tmp/emails.json"
  "$bin" jobs list reports --state scheduled --json >"$tmp/reports.json"
  "$PYTHON" - "$tmp/emails.json" "$tmp/reports.json" <<'PY'
import json, sys, time
from datetime import datetime

def jobs(path):
    return json.load(open(path))["jobs"]

emails, reports = jobs(sys.argv[1]), jobs(sys.argv[2])
assert [(j["job_type"], j["priority"], j["state"]) for j in emails] == [("password_reset", 9, "ready")], \
    f"emails: {emails}"
assert [(j["job_type"], j["state"]) for j in reports] == [("daily_rollup", "scheduled")], f"reports: {reports}"
ahead = datetime.fromisoformat(reports[0]["scheduled_at"].replace("Z", "+00:00")).timestamp() - time.time()
assert 3300 < ahead <= 3600, f"daily_rollup scheduled {ahead:.0f} s ahead, want an hour"
PY
}

# ran WHAT COUNT: fails unless COUNT tests passed, COUNT > 0 (a test file
# that compiled to nothing passes vacuously).
ran() {
  if [[ ! ${2:-0} -gt 0 ]]; then
    echo "check-packages: no $1 ran" >&2
    return 1
  fi
  echo "$1: $2 passed"
}

# run_samples LANG COMMAND...: each COMMAND (one per sample) against a
# fresh sepp serve, then the check.
run_samples() {
  local lang=$1
  shift
  if ((!samples_ok)); then return 0; fi
  start_serve
  local cmd
  for cmd in "$@"; do
    if ! bash -c "$cmd"; then
      stop_serve
      echo "check-packages: $lang sample failed: $cmd" >&2
      return 1
    fi
  done
  if ! check_spec_jobs; then
    stop_serve
    echo "check-packages: $lang samples did not do what their page says" >&2
    return 1
  fi
  stop_serve
  note "ok    $lang: $# spec samples against sepp serve, what they enqueued checked"
}

# ---- Python ----
check_python() {
  local whl=$packages/sepp-$version-py3-none-any.whl sdist=$packages/sepp-$version.tar.gz
  if [[ ! -f $whl || ! -f $sdist ]]; then skip "Python: no sepp-$version wheel and sdist in $packages (make packages)"; return 0; fi
  if ! "$PYTHON" -c 'import venv, grpc, google.protobuf, pytest, pytest_asyncio' 2>/dev/null; then
    skip "Python: $PYTHON lacks venv or Debian's grpcio, protobuf, pytest, pytest-asyncio (apt-get install python3-venv python3-grpcio python3-protobuf python3-pytest python3-pytest-asyncio)"
    return 0
  fi
  local p=$tmp/python
  mkdir -p "$p/project"
  "$PYTHON" -m venv --system-site-packages "$p/venv"
  "$p/venv/bin/pip" install --quiet --no-index "$whl"
  # The sdist too, built and installed as pip does it (no network: the
  # build backend is Debian's setuptools).
  "$PYTHON" -m venv --system-site-packages "$p/venv-sdist"
  "$p/venv-sdist/bin/pip" install --quiet --no-index --no-build-isolation "$sdist"
  (cd "$p/project" && "$p/venv-sdist/bin/python" -c 'import sepp, sepp.testing, sepp.pytest_plugin; assert sepp.__version__ == "'"$version"'"')
  cp sdk/python/tests/spec_samples/*.py sdk/python/tests/test_testing_example.py "$p/project/"
  cd "$p/project"
  "$p/venv/bin/python" -c 'import sepp, sys; assert sepp.__file__.startswith(sys.prefix), sepp.__file__; assert sepp.__version__ == "'"$version"'"'
  local run='import asyncio, runpy, sys; asyncio.run(runpy.run_path(sys.argv[1])["main"]())'
  run_samples python "'$p/venv/bin/python' -c '$run' priority_max.py" "'$p/venv/bin/python' -c '$run' scheduled_at.py"
  # The fixture comes from the installed package's pytest11 entry point.
  # (pytest fails when it collects no test.)
  "$p/venv/bin/python" -m pytest -q -p no:cacheprovider test_testing_example.py
  note "ok    python: wheel and sdist installed in fresh venvs; test_testing_example.py (sepp_server fixture) passed"
  cd "$root"
}

# ---- TypeScript ----
check_typescript() {
  local tgz=$packages/sepp-$version.tgz
  if [[ ! -f $tgz ]]; then skip "TypeScript: no sepp-$version.tgz in $packages (make packages)"; return 0; fi
  if ! command -v npm >/dev/null 2>&1 || ! command -v tsc >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
    skip "TypeScript: node, npm or tsc is not on PATH (apt-get install nodejs npm node-typescript)"
    return 0
  fi
  local p=$tmp/typescript
  mkdir -p "$p"
  cd "$p"
  npm init -y >/dev/null
  npm pkg set type=module
  npm install --offline --no-audit --no-fund --silent "$tgz"
  cp "$root"/sdk/typescript/test/spec-samples/*.ts "$root/sdk/typescript/test/example/testing.test.ts" .
  # node:test and node:assert typed just enough (Debian packages no
  # @types/node); the samples need nothing but the package.
  cp "$root/sdk/typescript/test/node.d.ts" node-shim.d.ts
  cat >tsconfig.json <<'JSON'
{
  "compilerOptions": {
    "target": "ES2022",
    "module": "node16",
    "moduleResolution": "node16",
    "lib": ["ES2022", "DOM"],
    "strict": true,
    "outDir": "out",
    "rootDir": "."
  },
  "include": ["*.ts"]
}
JSON
  tsc -p .
  # And as a project on the older node10 resolution finds the types (the
  # package's typesVersions, for sepp/testing).
  tsc -p . --module es2022 --moduleResolution node --noEmit
  local cmds=() f
  for f in *.ts; do
    case $f in *.d.ts | testing.test.ts) continue ;; esac
    cmds+=("node out/${f%.ts}.js")
  done
  run_samples typescript "${cmds[@]}"
  node --test out/testing.test.js | tee "$tmp/node-test.log"
  ran "TypeScript example tests" "$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$tmp/node-test.log")"
  note "ok    typescript: tarball installed in a fresh npm project; samples and example compiled against its types; testing.test.ts (startServer) passed"
  cd "$root"
}

# ---- Rust ----
check_rust() {
  local crate=$packages/sepp_rs-$version.crate
  if [[ ! -f $crate ]]; then skip "Rust: no sepp_rs-$version.crate in $packages (make packages)"; return 0; fi
  if [[ -z $(PATH=$RUST_PATH; command -v cargo || true) ]]; then skip "Rust: no cargo on RUST_PATH (see sdk/rust/README.md)"; return 0; fi
  local p=$tmp/rust
  mkdir -p "$p"
  tar -xzf "$crate" -C "$p"
  (cd "$p" && PATH=$RUST_PATH cargo new --quiet --vcs none --lib project)
  cd "$p/project"
  # Debian's registry in place of crates.io, as sdk/rust/README.md has a
  # Debian user do.
  mkdir -p .cargo src/bin tests
  cp "$root/sdk/rust/.cargo/config.toml" .cargo/
  # The samples' #[tokio::main] needs macros and rt-multi-thread; the other
  # features are sdk/rust's test build's, so that crates compiled for make
  # sdk-rust in the shared target folder (below) are reused as they are.
  cat >>Cargo.toml <<TOML
sepp_rs = { path = "../sepp_rs-$version" }
tokio = { version = "1.24", features = ["macros", "rt-multi-thread", "sync", "time", "process", "net", "io-util"] }

[dev-dependencies]
sepp_rs = { path = "../sepp_rs-$version", features = ["testing"] }
TOML
  # The samples as the package ships them (its examples), as programs.
  cp "../sepp_rs-$version"/examples/*.rs src/bin/
  cp "$root/sdk/rust/tests/testing_example.rs" tests/
  # The SDK's target folder: crates built there (make sdk-rust, cargo
  # package) with the same versions and features are reused; the packaged
  # sepp_rs is a crate of another source, always built afresh.
  export CARGO_TARGET_DIR=$root/sdk/rust/target
  PATH=$RUST_PATH CARGO_BUILD_JOBS=${CARGO_JOBS:-2} cargo build --offline --quiet --bins
  local cmds=() f
  for f in src/bin/*.rs; do
    f=${f##*/}
    cmds+=("$CARGO_TARGET_DIR/debug/${f%.rs}")
  done
  run_samples rust "${cmds[@]}"
  PATH=$RUST_PATH CARGO_BUILD_JOBS=${CARGO_JOBS:-2} cargo test --offline --test testing_example 2>&1 | tee "$tmp/rust-test.log"
  ran "Rust example tests" "$(grep -oE 'test result: ok\. [0-9]+ passed' "$tmp/rust-test.log" | grep -oE '[0-9]+' | head -n 1)"
  unset CARGO_TARGET_DIR
  note "ok    rust: packaged crate in a fresh cargo project; samples built from it; tests/testing_example.rs (TestServer) passed"
  cd "$root"
}

# ---- Go ----
check_go() {
  if ! command -v "$GO" >/dev/null 2>&1; then skip "Go: no go command"; return 0; fi
  local p=$tmp/go
  mkdir -p "$p/examples" "$p/sepptestexamples"
  cd "$p"
  "$GO" mod init example.com/seppcheck >/dev/null 2>&1
  # The client (client/), its OpenTelemetry tracing (client/otelsepp/), its
  # test server (client/sepptest/) and what the client shares with the
  # server (proto/, internal/) are modules of their own; sepptest requires
  # the server's module.
  local m
  for m in "" /client /client/otelsepp /client/sepptest /proto /internal; do
    "$GO" mod edit -require=github.com/sepp-io/sepp$m@v0.0.0 -replace=github.com/sepp-io/sepp$m="$root$m"
  done
  # A dependency's replace directives do not apply to the module that
  # requires it, so the patched raft and raft-wal forks of sepp's go.mod
  # (third_party/) must be repeated here: without them package cluster, and
  # so client/sepptest, does not compile (MatchIndexes and
  # ErrSentBeforeLocalAppendFailed are the forks'). Package client alone
  # needs neither.
  local r
  for r in $("$GO" mod edit -json "$root/go.mod" | "$PYTHON" -c '
import json, sys
for r in json.load(sys.stdin).get("Replace") or []:
    if r["New"]["Path"].startswith("./third_party/"):
        print(r["Old"]["Path"] + "=" + r["New"]["Path"][2:])'); do
    "$GO" mod edit -replace="${r%%=*}=$root/${r#*=}"
  done
  # The checksums of sepp's own dependencies: the module cache has them,
  # and nothing is looked up.
  cat "$root/go.sum" "$root/client/go.sum" "$root/client/otelsepp/go.sum" "$root/client/sepptest/go.sum" | sort -u > go.sum
  # The client's examples talk to a real server: $SEPP_BIN, set above.
  cp "$root/client/example_test.go" "$root/client/example_ackbatch_test.go" "$root/client/example_server_test.go" examples/
  cp "$root/client/sepptest/example_test.go" sepptestexamples/
  GOPROXY=off GOFLAGS=-mod=mod "$GO" mod tidy
  GOPROXY=off "$GO" test -count=1 -v ./... | tee "$tmp/go-test.log" | grep -E '^(--- |ok|FAIL|PASS)'
  ran "Go examples" "$(grep -c '^--- PASS: Example' "$tmp/go-test.log")"
  note "ok    go: a fresh module with a replace to the checkout (and to its raft forks); client's and sepptest's examples passed (the spec pages have no Go samples)"
  cd "$root"
}

if ((child)); then
  "check_$only"
  exit 0
fi

failed=0
for lang in ${only:-python typescript rust go}; do
  case $lang in python | typescript | rust | go) ;; *) echo "check-packages: no language $lang (python, typescript, rust, go)" >&2; exit 2 ;; esac
  echo "== $lang"
  start=$SECONDS
  if ! "$0" "$packages" "$bin" "$lang"; then
    note "FAIL  $lang (above)"
    failed=1
  fi
  note "      $lang took $((SECONDS - start)) s"
done
echo "== check-packages: sepp $version, packages from ${packages#"$root"/}"
cat "$SEPP_CHECK_RESULTS"
exit "$failed"
