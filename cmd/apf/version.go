package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// version and commit are stamped at build time by the Makefile:
//
//	go build -ldflags "-X main.version=$(git describe --tags --always --dirty) -X main.commit=$(git rev-parse HEAD)"
//
// A binary built otherwise (go install, go build) falls back on what the
// Go toolchain recorded in it (see versionFrom).
var (
	version string
	commit  string
)

// kubernetesModule is the module whose version says which Kubernetes
// release apf follows: k8s.io/api v0.X.Y belongs to Kubernetes v1.X.Y.
const kubernetesModule = "k8s.io/api"

// versionInfo is what apf version prints.
type versionInfo struct {
	Version           string `json:"version"`
	Commit            string `json:"commit"`
	GoVersion         string `json:"goVersion"`
	Platform          string `json:"platform"`
	KubernetesVersion string `json:"kubernetesVersion"`
}

// currentVersion describes this binary.
func currentVersion() versionInfo {
	bi, _ := debug.ReadBuildInfo()
	return versionFrom(version, commit, bi)
}

// versionFrom combines the stamped version and commit with the build
// information bi (nil when the binary has none): an unstamped version is
// the main module's (set by go install of a tagged version), else "dev";
// an unstamped commit is the VCS revision the toolchain recorded (marked
// "-dirty" if the tree was modified), else "unknown"; the Kubernetes
// version is read from the k8s.io/api module apf was built with.
func versionFrom(stampedVersion, stampedCommit string, bi *debug.BuildInfo) versionInfo {
	v := versionInfo{
		Version:           stampedVersion,
		Commit:            stampedCommit,
		GoVersion:         runtime.Version(),
		Platform:          runtime.GOOS + "/" + runtime.GOARCH,
		KubernetesVersion: "unknown",
	}
	if bi != nil {
		if v.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
		if v.Commit == "" {
			var revision string
			var modified bool
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					revision = s.Value
				case "vcs.modified":
					modified = s.Value == "true"
				}
			}
			if revision != "" && modified {
				revision += "-dirty"
			}
			v.Commit = revision
		}
		for _, dep := range bi.Deps {
			if dep.Path != kubernetesModule {
				continue
			}
			if dep.Replace != nil {
				dep = dep.Replace
			}
			if k, ok := kubernetesVersion(dep.Version); ok {
				v.KubernetesVersion = k
			}
		}
	}
	if v.Version == "" {
		v.Version = "dev"
	}
	if v.Commit == "" {
		v.Commit = "unknown"
	}
	return v
}

// kubernetesVersion turns a version of Kubernetes' staging modules
// (v0.37.2) into the Kubernetes release it belongs to (v1.37.2).
func kubernetesVersion(module string) (string, bool) {
	rest, ok := strings.CutPrefix(module, "v0.")
	if !ok || rest == "" {
		return "", false
	}
	return "v1." + rest, true
}

// writeVersion prints v in the output format of apf version -o.
func writeVersion(w io.Writer, v versionInfo, format string) error {
	var err error
	switch format {
	case "json":
		var data []byte
		if data, err = json.MarshalIndent(v, "", "  "); err == nil {
			_, err = fmt.Fprintf(w, "%s\n", data)
		}
	case "yaml":
		var data []byte
		if data, err = yaml.Marshal(v); err == nil {
			_, err = w.Write(data)
		}
	default:
		_, err = fmt.Fprintf(w, "Version:            %s\nCommit:             %s\nGo version:         %s %s\nKubernetes version: %s\n",
			v.Version, v.Commit, v.GoVersion, v.Platform, v.KubernetesVersion)
	}
	if err != nil {
		return failure(err)
	}
	return nil
}

func init() { addCommand(newVersionCmd) }

func newVersionCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of apf, its commit, Go version and the Kubernetes version it follows",
		Long: `Print the version of apf, the commit it was built from, the Go version that built
it, and the Kubernetes release whose API Priority and Fairness it follows (the
flowcontrol API, the bootstrap configuration and the behaviour clients see).

"apf --version" prints the same as "apf version".`,
		Example: `  # Print the version
  apf version

  # Print it as JSON, for scripts
  apf version -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return writeVersion(cmd.OutOrStdout(), currentVersion(), output)
		},
	}
	outputFlag(cmd, &output)
	return cmd
}
