package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// usageRoot makes the root command's command-line mistakes exit 2 like
// every subcommand's: an unknown command, an unknown flag, a bare `sepp`.
// Cobra itself returns them as plain errors (exit 1).
func usageRoot(root *cobra.Command) {
	root.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageError{fmt.Errorf("unknown command %q for %q (sepp --help lists the commands)", args[0], cmd.CommandPath())}
		}
		return nil
	}
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		_ = cmd.Help()
		return usageError{fmt.Errorf("%s needs a command", cmd.CommandPath())}
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
}
