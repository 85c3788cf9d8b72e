#!/usr/bin/env bash
# release.sh VERSION
#
# VERSION must be the one in the file VERSION, which every SDK package
# carries too (scripts/check-versions.sh).
# Builds a release of sepp into dist/VERSION/ (`make release VERSION=x.y.z`
# runs it; docs/releasing.md is the procedure around it):
#   sepp_VERSION_OS_ARCH             static binaries (CGO_ENABLED=0, -trimpath)
#                                    for linux and darwin on amd64 and arm64,
#                                    with VERSION and the git commit linked in
#   sepp_VERSION_OS_ARCH.sbom.txt    each binary's software bill of materials:
#                                    `go version -m`, the Go version, every
#                                    module linked in with its version and
#                                    checksum, and the build settings
#   sepp_VERSION_image_linux_ARCH.tar  the container image sepp:VERSION
#                                    (deploy/Dockerfile) for the building machine's
#                                    architecture, `docker save`d; skipped,
#                                    with the reason printed, without Docker
#   sepp-VERSION-py3-none-any.whl, sepp-VERSION.tar.gz, sepp-VERSION.tgz,
#   sepp_rs-VERSION.crate            the SDK packages (scripts/build-packages.sh:
#                                    the Python wheel and sdist, the npm
#                                    tarball, the crate); a toolchain that is
#                                    missing skips its package, printed
#   SHA256SUMS                       the SHA-256 of every file above
#                                    (`sha256sum -c SHA256SUMS` checks them)
set -euo pipefail
cd "$(dirname "$0")/.."

version=${1:?usage: scripts/release.sh VERSION (e.g. 1.2.3)}
# The version becomes file names, an image tag and a linker flag.
if [[ ! $version =~ ^[0-9A-Za-z][0-9A-Za-z.+_-]{0,127}$ ]]; then
  echo "release: VERSION must be 1..128 letters, digits, '.', '+', '_' or '-' starting with a letter or digit, got '$version'" >&2
  exit 2
fi
# The SDK packages (make packages) carry the version in the file VERSION:
# the binaries must report the same one.
file_version=$(tr -d '[:space:]' <VERSION)
if [[ $version != "$file_version" ]]; then
  echo "release: VERSION=$version, but the file VERSION (the SDK packages' version) says '$file_version': set it and the SDKs' to $version first (scripts/check-versions.sh names every place)" >&2
  exit 2
fi
scripts/check-versions.sh
GO=${GO:-go}
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
if [[ $commit != unknown && -n $(git status --porcelain --untracked-files=no 2>/dev/null) ]]; then
  commit+=-dirty
fi

out=dist/$version
rm -rf "$out"
mkdir -p "$out"
ldflags="-s -w -X main.version=$version -X main.commit=$commit"

for target in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64; do
  os=${target%/*}
  arch=${target#*/}
  name=sepp_${version}_${os}_${arch}
  echo "building $name" >&2
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch "$GO" build -trimpath -ldflags "$ldflags" -o "$out/$name" ./cmd/sepp
  "$GO" version -m "$out/$name" >"$out/$name.sbom.txt"
done

host_arch=$("$GO" env GOARCH)
image_reason=""
if ! command -v docker >/dev/null 2>&1; then
  image_reason="no docker command on PATH"
elif ! docker info >/dev/null 2>&1; then
  image_reason="docker cannot reach its daemon (docker info fails)"
fi
if [[ -z $image_reason ]]; then
  ctx=$(mktemp -d)
  trap 'rm -rf "$ctx"' EXIT
  cp deploy/Dockerfile deploy/docker-single.toml "$ctx/"
  cp "$out/sepp_${version}_linux_${host_arch}" "$ctx/sepp"
  echo "building image sepp:$version (linux/$host_arch)" >&2
  docker build -q -t "sepp:$version" "$ctx" >/dev/null
  docker save -o "$out/sepp_${version}_image_linux_${host_arch}.tar" "sepp:$version"
else
  echo "release: skipped the container image: $image_reason" >&2
fi

echo "building the SDK packages" >&2
scripts/build-packages.sh "$out"

(cd "$out" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort | xargs -d '\n' sha256sum -- >SHA256SUMS)
echo "release $version (commit $commit) in $out:" >&2
cat "$out/SHA256SUMS"
