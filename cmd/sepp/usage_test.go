package main

import (
	"bytes"
	"errors"
	"testing"

	"github.com/spf13/cobra"
)

func TestUsageRoot_CommandLineMistakesExit2(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"UnknownCommand", []string{"bogus"}, 2},
		{"UnknownFlag", []string{"--bogus"}, 2},
		{"NoCommand", nil, 2},
		{"ServeUnknownFlag", []string{"serve", "--bogus"}, 2},
		{"Version", []string{"--version"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := &cobra.Command{Use: "sepp", SilenceUsage: true, SilenceErrors: true, Version: "test"}
			root.AddCommand(serveCommand())
			usageRoot(root)
			root.SetOut(&bytes.Buffer{})
			root.SetErr(&bytes.Buffer{})
			root.SetArgs(tt.args)
			err := root.Execute()
			code := 0
			if err != nil {
				code = 1
				var coded interface{ ExitCode() int }
				if errors.As(err, &coded) {
					code = coded.ExitCode()
				}
			}
			if code != tt.want {
				t.Fatalf("sepp %v: exit %d (%v), want %d", tt.args, code, err, tt.want)
			}
		})
	}
}
