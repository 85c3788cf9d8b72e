//go:build !sepp_fault_inject

package store

import "github.com/cockroachdb/pebble/v2"

// faultInjector is empty in every real build. A binary built with the tag
// sepp_fault_inject (faultinject_on.go) kills itself in the middle of
// writing a flush's table once the node's data dir holds the file
// inject-kill-in-flush: the integration tests' way to crash a real process
// during a store flush.
type faultInjector struct{}

func injectFaults(string, *pebble.Options) *faultInjector { return nil }

func (*faultInjector) start(*Store) {}

func (*faultInjector) stop() {}

// killInInstall does nothing in a real build; a test build
// (faultinject_on.go) kills the process at the named point of an install
// when the store's parent folder holds inject-kill-in-install naming it.
func killInInstall(string, string) {}
