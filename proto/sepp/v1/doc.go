// Package seppv1 is the generated Go code of sepp's public gRPC API
// (package sepp.v1): QueueService for producers and workers, AdminService
// for operators, ClusterService for membership, and the typed error details
// (errors.proto) that a status carries. The .proto files beside this file are
// the source; regenerate with proto/sepp/generate.sh (protoc) or
// `buf generate --path sepp` in proto/. Never edit the .pb.go files by hand.
package seppv1
