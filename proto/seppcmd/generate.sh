#!/usr/bin/env bash
# Regenerates the Go code of the internal Raft command protobufs.
# Needs protoc (Debian's protobuf-compiler) and protoc-gen-go
# (go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12) on PATH.
set -euo pipefail
cd "$(dirname "$0")"
export PATH="$PATH:$(go env GOPATH)/bin"
protoc --proto_path=. \
  --go_out=. --go_opt=paths=source_relative \
  v1/command.proto
