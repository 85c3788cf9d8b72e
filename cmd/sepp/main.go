// Command sepp is the one binary of the sepp job queue: it serves a node
// (`sepp serve`), starts a local three-node cluster (`sepp dev`), drives a
// running cluster as an operator (enqueue, dead-letters, cluster ...) and
// measures it (`sepp bench`).
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/sepp-io/sepp/cmd/sepp/internal/bench"
	"github.com/sepp-io/sepp/cmd/sepp/internal/cli"
)

func main() {
	root := &cobra.Command{
		Use:           "sepp",
		Short:         "sepp: a replicated job queue",
		Long:          "sepp is a job-queue server whose nodes replicate every state change through Raft.\nStart one node with `sepp serve`, a local three-node cluster with `sepp dev`.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.SetVersionTemplate(build.String())
	root.AddCommand(versionCommand(), serveCommand(), devCommand(), hashPasswordCommand(), hashTokenCommand(), probeCommand(), bench.Command())
	root.AddCommand(cli.Commands()...)
	usageRoot(root)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "sepp:", err)
		var coded interface{ ExitCode() int }
		if errors.As(err, &coded) {
			os.Exit(coded.ExitCode())
		}
		os.Exit(1)
	}
}
