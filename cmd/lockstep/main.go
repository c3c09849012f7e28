// Command lockstep is Lockstep's one binary: the operator and the tools around it.
package main

import (
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:           "lockstep",
		Short:         "Run and update multi-role AI workloads (PodCliqueSets) on Kubernetes",
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	root.AddCommand(newOperatorCommand())
	root.AddCommand(newHubCommand())
	root.AddCommand(newPlanCommand())
	if err := root.Execute(); err != nil {
		os.Exit(1)
	}
}
