#!/usr/bin/env bash
# check-versions.sh: fail unless every SDK package carries the version in
# VERSION, the release's version (make release VERSION=... must name the
# same one; scripts/release.sh checks). The places:
#   sdk/python/pyproject.toml           [project] version
#   sdk/python/src/sepp/__init__.py     __version__
#   sdk/typescript/package.json         "version"
#   sdk/rust/Cargo.toml                 [package] version (and Cargo.lock's entry)
#   go.mod, client/go.mod, client/otelsepp/go.mod, client/sepptest/go.mod
#                                       each requirement of a sepp module
#                                       (github.com/sepp-io/sepp...): v+VERSION,
#                                       the tags a release pushes
#                                       (docs/releasing.md)
# make packages and make check-packages run it first.
set -euo pipefail
cd "$(dirname "$0")/.."

want=$(tr -d '[:space:]' <VERSION)
[[ -n $want ]] || { echo "check-versions: VERSION is empty" >&2; exit 1; }

# The first `version = "..."` of a TOML section.
toml_version() { sed -n "/^\[$2\]/,/^\[/ s/^version = \"\(.*\)\"\$/\1/p" "$1" | head -n 1; }

declare -A have=(
  [sdk/python/pyproject.toml]=$(toml_version sdk/python/pyproject.toml project)
  [sdk/python/src/sepp/__init__.py]=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' sdk/python/src/sepp/__init__.py)
  [sdk/typescript/package.json]=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' sdk/typescript/package.json)
  [sdk/rust/Cargo.toml]=$(toml_version sdk/rust/Cargo.toml package)
  [sdk/rust/Cargo.lock]=$(sed -n '/^name = "sepp_rs"$/{n;s/^version = "\(.*\)"$/\1/p;}' sdk/rust/Cargo.lock)
)
# The Go modules' requirements of each other: what a program that imports
# the client at tag client/vX resolves, since replace directives apply only
# inside this repository.
for mod in go.mod client/go.mod client/otelsepp/go.mod client/sepptest/go.mod; do
  while read -r path version; do
    have["$mod: $path"]=${version#v}
  done < <(sed -n -E 's#^(require )?[[:space:]]*(github\.com/sepp-io/sepp[^ ]*) (v[^ ]+)( // indirect)?$#\2 \3#p' "$mod")
done
bad=0
for f in "${!have[@]}"; do
  if [[ ${have[$f]} != "$want" ]]; then
    echo "check-versions: $f has version '${have[$f]}', VERSION has '$want'" >&2
    bad=1
  fi
done
if ((bad)); then
  echo "check-versions: set every one of them to the release's version" >&2
  exit 1
fi
echo "versions: $want in VERSION, every SDK and the Go modules' requirements of each other (${#have[@]} places)"
