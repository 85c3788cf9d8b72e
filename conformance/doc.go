// Package conformance holds the SDK conformance suite: scenarios written
// once as data (scenarios/*.json) that the Go, Python, TypeScript and Rust
// SDKs each run against a real sepp server, so the four clients are held to
// one contract, admin calls included. README.md describes the scenario
// format and the step vocabulary.
//
// The package itself is only the Go runner, in its tests: it interprets
// the scenarios with the Go client (github.com/sepp-io/sepp/client)
// against `sepp serve` ($SEPP_BIN, or built from this checkout). It imports
// nothing of the server.
package conformance
