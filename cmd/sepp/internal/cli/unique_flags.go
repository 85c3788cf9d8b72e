package cli

import (
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sepp-io/sepp/client"
)

// uniqueFlags are the enqueue flags of a unique job.
type uniqueFlags struct {
	on           bool
	key          string
	fields       []string
	coverDead    bool
	completedFor time.Duration
	conflict     string
}

func (u *uniqueFlags) register(f *pflag.FlagSet) {
	f.BoolVar(&u.on, "unique", false, "make the job unique in its queue (implied by the other --unique-* flags)")
	f.StringVar(&u.key, "unique-key", "", "uniqueness key; default derived from the job type, payload and --unique-field fields")
	f.StringArrayVar(&u.fields, "unique-field", nil, "custom field the derived key includes (repeatable)")
	f.BoolVar(&u.coverDead, "unique-cover-dead", false, "also hold the key while the dead-letter record is kept")
	f.DurationVar(&u.completedFor, "unique-completed-for", 0, "also hold the key this long after the ack (e.g. 10m)")
	f.StringVar(&u.conflict, "unique-conflict", "return", "on a held key: return (the existing job) or refuse (fail naming it)")
}

// apply sets req's unique options when a --unique flag is given.
func (u *uniqueFlags) apply(cmd *cobra.Command, req *client.EnqueueRequest) error {
	f := cmd.Flags()
	if !u.on && !f.Changed("unique-key") && len(u.fields) == 0 && !u.coverDead && !f.Changed("unique-completed-for") && !f.Changed("unique-conflict") {
		return nil
	}
	opts := client.UniqueOptions{Key: u.key, Fields: u.fields, CoverDead: u.coverDead, CompletedFor: u.completedFor}
	switch u.conflict {
	case "return":
	case "refuse":
		opts.Refuse = true
	default:
		return usageErrorf("--unique-conflict must be return or refuse, got %q", u.conflict)
	}
	if u.completedFor < 0 {
		return usageErrorf("--unique-completed-for must not be negative, got %s", u.completedFor)
	}
	if u.key != "" && len(u.fields) > 0 {
		return usageErrorf("--unique-key and --unique-field are exclusive (fields shape a derived key)")
	}
	req.WithUnique(opts)
	return nil
}
