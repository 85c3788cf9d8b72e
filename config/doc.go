// Package config loads a sepp node's TOML configuration: the [server],
// [cluster], [limits], [storage] and [[queues]] tables, with every default of
// the spec filled in, strictly (an unknown key is an error naming its line),
// and validated as a whole before anything starts.
//
// It turns the file into the engine's Config (the replicated queue
// behaviour) and the node's own settings (addresses, data dir, Raft timing).
// It imports engine for the types it fills; nothing below cmd imports it.
package config

// docs/configuration.md is written from this package's doc comments and
// Default; configdoc's test fails while the committed page is stale.
//go:generate go run ./configdoc -src . -out ../docs/configuration.md
