// Package seppstorev1 holds the records of sepp's on-disk store, generated
// from store.proto by `make generate`. Only the store package uses it; the
// Raft log's commands live in proto/seppcmd/v1 and the public API in
// proto/sepp/v1.
package seppstorev1
