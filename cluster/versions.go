package cluster

import (
	"fmt"

	"github.com/sepp-io/sepp/fsm"
)

// versionNeed names command version v for a refusal: "command version 8
// (unique_jobs)", the feature's name from the table of versions
// (fsm/versions.go), so a refusal says what the version adds.
func versionNeed(v uint32) string {
	if f, ok := fsm.FeatureOf(v); ok {
		return fmt.Sprintf("command version %d (%s)", v, f.Name)
	}
	return fmt.Sprintf("command version %d", v)
}

// Legacy command-version names (to be removed after the next release).
//
// A leader learns what each member's binary applies from the member's
// facts (facts.go, ClusterService.GetMemberFacts). A binary older than that
// call answered only its gRPC health service's question for names like
// "sepp.command.v10"; the leader asks that question (Config.PeerCommandVersion)
// only of a member that does not serve the facts call, and this binary still
// answers the names so that an older leader can learn its version during a
// rolling upgrade.

// CommandVersionService is the gRPC health service name a node serves for
// each command version v its binary applies: "sepp.command.v2" and so on.
// Legacy: see above.
func CommandVersionService(v uint32) string { return fmt.Sprintf("sepp.command.v%d", v) }

// IsCommandVersionService reports whether service is the health service
// name of a command version this binary applies, so that the gRPC layer
// can answer for it without knowing the state machine. Legacy: see above.
func IsCommandVersionService(service string) bool {
	for v := uint32(1); v <= fsm.CommandVersion; v++ {
		if service == CommandVersionService(v) {
			return true
		}
	}
	return false
}
