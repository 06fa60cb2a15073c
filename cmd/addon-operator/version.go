package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time (make build: -ldflags -X main.version=…);
// without it the module version Go recorded, or "devel".
var version = ""

// buildInfo is what `version` prints.
type buildInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

func readBuildInfo() buildInfo {
	b := buildInfo{Version: version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info, ok := debug.ReadBuildInfo(); ok {
		if b.Version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			b.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Commit = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	if b.Version == "" {
		b.Version = "devel"
	}
	return b
}

func versionString() string {
	b := readBuildInfo()
	s := "addon-operator " + b.Version
	if b.Commit != "" {
		s += " (commit " + b.Commit
		if b.Modified {
			s += ", modified"
		}
		s += ")"
	}
	return s + " " + b.GoVersion + " " + b.Platform
}

func newVersionCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print the version, commit and Go version",
		Example: "  addon-operator version\n  addon-operator version -o json",
		Args:    exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(&output, "table", "json", "yaml"); err != nil {
				return err
			}
			if done, err := writeData(cmd.OutOrStdout(), output, readBuildInfo()); done {
				return err
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionString())
			return err
		},
	}
	outputFlag(cmd.Flags(), &output, "table", "json", "yaml")
	return cmd
}
