// Command lockstep is Lockstep's one binary: the operator and the tools around
// it. Installed as kubectl-lockstep it is also `kubectl lockstep`.
package main

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/lockstep-dev/lockstep/internal/cli"
)

func main() {
	root := &cobra.Command{
		Use:           "lockstep",
		Short:         "Run and update multi-role AI workloads (PodCliqueSets) on Kubernetes",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	if filepath.Base(os.Args[0]) == "kubectl-lockstep" {
		root.Use = "kubectl lockstep"
	}
	root.AddCommand(newOperatorCommand())
	root.AddCommand(newHubCommand())
	root.AddCommand(newPlanCommand())
	root.AddGroup(cli.Group)
	root.AddCommand(cli.Commands(os.Stdout)...)
	os.Exit(cli.ExitCode(root.Execute(), os.Stderr))
}
