package membercluster

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeconfigPolicy says what a member kubeconfig may contain beyond data: the
// hub treats a kubeconfig from a Secret as data, since whoever can write the
// Secret is not trusted to run code on the hub or read its files.
type KubeconfigPolicy struct {
	// AllowExec lets exec plugins, auth providers and file references
	// (tokenFile, client-certificate, client-key, certificate-authority)
	// through: each runs code on the hub or reads one of its files, such as the
	// hub's own service-account token.
	AllowExec bool
	// AllowInsecureTLS lets insecure-skip-tls-verify: true through.
	AllowInsecureTLS bool
}

// KubeconfigRejectedError is a kubeconfig the policy refuses. Each problem
// names the field as it is written in the kubeconfig's YAML.
type KubeconfigRejectedError struct {
	Problems []string
}

func (e *KubeconfigRejectedError) Error() string { return strings.Join(e.Problems, "; ") }

// Hints of the refusals: what to do instead.
const (
	fileHint     = "the hub reads no files named by a kubeconfig; embed the data or start the hub with --allow-kubeconfig-exec"
	execHint     = "the hub runs no command named by a kubeconfig; use a token or a client certificate, or start the hub with --allow-kubeconfig-exec"
	providerHint = "an auth provider runs code on the hub; use a token or a client certificate, or start the hub with --allow-kubeconfig-exec"
	insecureHint = "the hub verifies every member's serving certificate; give certificate-authority-data or start the hub with --allow-insecure-kubeconfig-tls"
)

// CheckKubeconfig checks the cluster and user of cfg's current context, the
// only ones a client built from cfg uses. It returns a *KubeconfigRejectedError
// listing every refused field, or another error when cfg has no usable
// current context.
func CheckKubeconfig(cfg *clientcmdapi.Config, p KubeconfigPolicy) error {
	name := cfg.CurrentContext
	if name == "" {
		return errors.New("current-context is not set: the hub uses the current context's cluster and user")
	}
	kctx, ok := cfg.Contexts[name]
	if !ok || kctx == nil {
		return fmt.Errorf("current-context: context %q is not in contexts", name)
	}
	cluster, ok := cfg.Clusters[kctx.Cluster]
	if !ok || cluster == nil {
		return fmt.Errorf("contexts[%q].context.cluster: cluster %q is not in clusters", name, kctx.Cluster)
	}
	var problems []string
	refuse := func(field, rule, hint string) {
		problems = append(problems, fmt.Sprintf("%s: %s (%s)", field, rule, hint))
	}

	cp := fmt.Sprintf("clusters[%q].cluster.", kctx.Cluster)
	if cluster.CertificateAuthority != "" && !p.AllowExec {
		refuse(cp+"certificate-authority", "file references are not allowed", fileHint)
	}
	if cluster.InsecureSkipTLSVerify && !p.AllowInsecureTLS {
		refuse(cp+"insecure-skip-tls-verify", "true is not allowed", insecureHint)
	}

	// A context without a user connects without credentials.
	if kctx.AuthInfo != "" {
		user, ok := cfg.AuthInfos[kctx.AuthInfo]
		if !ok || user == nil {
			return fmt.Errorf("contexts[%q].context.user: user %q is not in users", name, kctx.AuthInfo)
		}
		if !p.AllowExec {
			up := fmt.Sprintf("users[%q].user.", kctx.AuthInfo)
			if user.Exec != nil {
				refuse(up+"exec", "exec plugins are not allowed", execHint)
			}
			if user.AuthProvider != nil {
				refuse(up+"auth-provider", "auth providers are not allowed", providerHint)
			}
			for _, f := range []struct{ field, path string }{
				{"tokenFile", user.TokenFile},
				{"client-certificate", user.ClientCertificate},
				{"client-key", user.ClientKey},
			} {
				if f.path != "" {
					refuse(up+f.field, "file references are not allowed", fileHint)
				}
			}
		}
	}
	if len(problems) > 0 {
		return &KubeconfigRejectedError{Problems: problems}
	}
	return nil
}

// restConfigFromKubeconfig parses a kubeconfig, checks it against the policy
// and builds a client configuration from exactly what was checked.
func restConfigFromKubeconfig(data []byte, p KubeconfigPolicy) (*rest.Config, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("parsing the kubeconfig: %w", err)
	}
	if err := CheckKubeconfig(cfg, p); err != nil {
		return nil, err
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("building a client configuration: %w", err)
	}
	if rc.Host == "" {
		return nil, errors.New("the kubeconfig names no server")
	}
	return rc, nil
}
