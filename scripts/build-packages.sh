#!/usr/bin/env bash
# build-packages.sh [OUT]
#
# Builds the SDKs' packages into OUT (default dist/packages; `make packages`
# runs it), each with its ecosystem's own tool, offline:
#   sepp-VERSION-py3-none-any.whl, sepp-VERSION.tar.gz
#       python3 -m build --no-isolation (Debian's python3-build and
#       setuptools) on a clean copy of sdk/python, so no build/ or
#       egg-info of an earlier build leaks into the wheel
#   sepp-VERSION.tgz
#       npm pack of sdk/typescript; its prepack script compiles dist/ with
#       tsc (Debian's node-typescript)
#   sepp_rs-VERSION.crate
#       cargo package of sdk/rust against Debian's crate registry
#       (sdk/rust/.cargo/config.toml). CARGO_PACKAGE_FLAGS is passed on:
#       cargo verifies the package by building it unless it holds
#       --no-verify, which make check-packages passes because it builds the
#       packaged crate in a fresh project anyway.
#
# VERSION is the file VERSION; scripts/check-versions.sh runs first. A
# toolchain that is missing skips its package with the reason printed; with
# SEPP_REQUIRE_ALL=1 (CI) that is a failure instead.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

out=${1:-dist/packages}
mkdir -p "$out"
out=$(cd "$out" && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
RUST_PATH=${RUST_PATH:-/usr/bin:$PATH}
CARGO_PACKAGE_FLAGS=${CARGO_PACKAGE_FLAGS:-}

scripts/check-versions.sh
version=$(tr -d '[:space:]' <VERSION)

skipped=0
skip() {
  if [[ ${SEPP_REQUIRE_ALL:-} == 1 ]]; then
    echo "packages: $1 (SEPP_REQUIRE_ALL=1: failing instead of skipping)" >&2
    exit 1
  fi
  echo "packages: SKIPPED $1" >&2
  skipped=$((skipped + 1))
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== Python: wheel and sdist"
if ! "$PYTHON" -c 'import build, setuptools' 2>/dev/null; then
  skip "the Python packages: $PYTHON cannot import build and setuptools (apt-get install python3-build)"
else
  rm -f "$out/sepp-$version"-*.whl "$out/sepp-$version.tar.gz"
  cp -r sdk/python "$tmp/python"
  rm -rf "$tmp/python/build" "$tmp/python"/src/*.egg-info "$tmp/python/.mypy_cache"
  find "$tmp/python" -name __pycache__ -prune -exec rm -rf {} +
  (cd "$tmp/python" && "$PYTHON" -m build --no-isolation --outdir "$out" . >"$tmp/python-build.log" 2>&1) \
    || { cat "$tmp/python-build.log" >&2; exit 1; }
fi

echo "== TypeScript: npm tarball"
if ! command -v npm >/dev/null 2>&1 || ! command -v tsc >/dev/null 2>&1; then
  skip "the npm tarball: npm or tsc is not on PATH (apt-get install npm node-typescript)"
else
  rm -f "$out/sepp-$version.tgz"
  rm -rf sdk/typescript/dist
  (cd sdk/typescript && npm pack --offline --silent --pack-destination "$out" >/dev/null)
fi

echo "== Rust: crate"
if [[ -z $(PATH=$RUST_PATH; command -v cargo || true) ]]; then
  skip "the crate: no cargo on RUST_PATH (apt-get install cargo rustc, see sdk/rust/README.md)"
else
  rm -f "$out/sepp_rs-$version.crate"
  # --allow-dirty: a working tree with changes packages them, as a local
  # check should; release from a clean tree (docs/releasing.md).
  # shellcheck disable=SC2086
  (cd sdk/rust && PATH=$RUST_PATH CARGO_BUILD_JOBS=${CARGO_JOBS:-2} cargo package --offline --allow-dirty $CARGO_PACKAGE_FLAGS 2>"$tmp/cargo.log") \
    || { cat "$tmp/cargo.log" >&2; exit 1; }
  target=$(cd sdk/rust && PATH=$RUST_PATH cargo metadata --offline --format-version 1 --no-deps | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
  cp "$target/package/sepp_rs-$version.crate" "$out/"
fi

echo "packages in ${out#"$root"/}:"
(cd "$out" && ls -l -- *"$version"* 2>/dev/null | awk '{print "  " $5 "\t" $9}')
if ((skipped)); then
  echo "packages: $skipped skipped (above)" >&2
fi
