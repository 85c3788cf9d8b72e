#!/bin/sh
# Regenerates the Go code of the public API (proto/sepp/v1) with plain protoc.
# Needs protoc (Debian's protobuf-compiler is enough: it ships the well-known
# types) and the plugins, installed with
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
#   go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@latest
# buf users run `buf generate --path sepp` in proto/ instead (buf.gen.yaml
# there does the same), and `buf lint --path sepp` to lint.
set -eu
cd "$(dirname "$0")/.."   # proto/: the import root, so imports read "sepp/v1/..."
PATH="$PATH:$(go env GOPATH)/bin"
export PATH
protoc -I . \
  --go_out=. --go_opt=paths=source_relative \
  --go-grpc_out=. --go-grpc_opt=paths=source_relative \
  sepp/v1/*.proto
