package fsm

import (
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"

	"github.com/sepp-io/sepp/engine"
)

// RecordFieldsConfigCommand builds a declarative ConfigSet (as
// DeclaredConfigCommand) that also turns recordFields on.
func RecordFieldsConfigCommand(cfg engine.Config) *cmdpb.Command {
	c := DeclaredConfigCommand(cfg)
	atLeast(&c.Version, CommandVersionRecordFields) // never lower what the config needs (tags)
	c.GetConfigSet().RecordFields = true
	return c
}
