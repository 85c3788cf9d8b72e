package fsm

import (
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"

	"github.com/sepp-io/sepp/engine"
)

// CommandVersionRecordFields is the version of a ConfigSet that sets
// record_fields (engine.EnableRecordFields): an older binary would drop the
// field and keep writing origins into custom keys and histories without
// their detail, so its state would split from the others'. The leader
// proposes it only while every member applies it.
const CommandVersionRecordFields = 12

// RecordFieldsConfigCommand builds a declarative ConfigSet (as
// DeclaredConfigCommand) that also turns recordFields on.
func RecordFieldsConfigCommand(cfg engine.Config) *cmdpb.Command {
	c := DeclaredConfigCommand(cfg)
	c.Version = CommandVersionRecordFields
	c.GetConfigSet().RecordFields = true
	return c
}
