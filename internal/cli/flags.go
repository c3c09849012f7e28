package cli

import (
	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
)

// connectionFlags are kubectl's flags for reaching a cluster (--kubeconfig,
// --context, --namespace, --server, --as, ...), read the way kubectl reads
// them. They come from client-go's clientcmd rather than cli-runtime, whose
// resource builder brings kustomize and Go's plugin package into the binary:
// with plugin linked in, the linker keeps every exported method, and the
// operator and hub, which share this binary, carry them all in memory.
type connectionFlags struct {
	rules     *clientcmd.ClientConfigLoadingRules
	overrides clientcmd.ConfigOverrides
}

func newConnectionFlags() *connectionFlags {
	return &connectionFlags{rules: clientcmd.NewDefaultClientConfigLoadingRules()}
}

// bind adds the flags to one verb's flag set; every verb shares the values.
func (f *connectionFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.rules.ExplicitPath, clientcmd.RecommendedConfigPathFlag, "", "Path to the kubeconfig file to use for CLI requests.")
	names := clientcmd.RecommendedConfigOverrideFlags("")
	names.ClusterOverrideFlags.APIServer.ShortName = "s" // kubectl's -s
	clientcmd.BindOverrideFlags(&f.overrides, fs, names)
}

// loader reads the kubeconfig with the flags' overrides, as kubectl does.
func (f *connectionFlags) loader() clientcmd.ClientConfig {
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(f.rules, &f.overrides)
}
