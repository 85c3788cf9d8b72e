package fsm

import cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"

// CompactChargeConfigCommand makes cmd, a declarative ConfigSet (a
// DeclaredConfigCommand, possibly with the newer switches set), also turn
// compactCharge on: a plain waiting job is charged to the memory budget as
// the compact entry the engine holds it as (engine.EnableCompactCharge).
// The leader proposes it once every member applies
// CommandVersionCompactCharge: a member that still charges full jobs would
// refuse enqueues the others accept near a budget.
func CompactChargeConfigCommand(cmd *cmdpb.Command) *cmdpb.Command {
	atLeast(&cmd.Version, CommandVersionCompactCharge)
	cmd.GetConfigSet().CompactCharge = true
	return cmd
}
