package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version and commit name the release this binary is. `make build` and
// `make release` set them with
//
//	-ldflags "-X main.version=1.2.3 -X main.commit=<git revision>"
//
// A plain `go build` leaves them empty: init then takes what the Go
// toolchain recorded (resolveBuild). After init, version is the resolved
// version, which GetServerInfo and the member facts report.
var (
	version string
	commit  string
)

// build is what `sepp version` and `sepp --version` print.
var build buildInfo

func init() {
	bi, _ := debug.ReadBuildInfo()
	build = resolveBuild(version, commit, bi)
	version = build.Version
}

// buildInfo names a binary: its release, its source revision and the Go
// that built it for which platform.
type buildInfo struct {
	Version   string
	Commit    string
	GoVersion string
	Platform  string
}

// String is the text of `sepp version`.
func (b buildInfo) String() string {
	return fmt.Sprintf("sepp %s\ncommit:   %s\ngo:       %s\nplatform: %s\n", b.Version, b.Commit, b.GoVersion, b.Platform)
}

// resolveBuild fills in what the linker flags left empty from the build
// information the Go toolchain embeds (bi may be nil): the module version
// of a `go install ...@v1.2.3`, the VCS revision of a build inside a git
// checkout (suffixed "-dirty" when the tree had changes). What neither
// names is "dev" (version) or "unknown" (commit).
func resolveBuild(ldVersion, ldCommit string, bi *debug.BuildInfo) buildInfo {
	b := buildInfo{Version: ldVersion, Commit: ldCommit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		if bi.GoVersion != "" {
			b.GoVersion = bi.GoVersion
		}
		if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.Version = bi.Main.Version
		}
		if b.Commit == "" {
			var rev string
			var modified bool
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					modified = s.Value == "true"
				}
			}
			if rev != "" && modified {
				rev += "-dirty"
			}
			b.Commit = rev
		}
	}
	if b.Version == "" {
		b.Version = "dev"
	}
	if b.Commit == "" {
		b.Commit = "unknown"
	}
	return b
}

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print this binary's version, commit, Go version and platform",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), build.String())
			return err
		},
	}
}
