package cli

import (
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The connection flags read a kubeconfig as kubectl does: its current
// context and that context's namespace unless --context or -n say otherwise.
func TestConnectionFlags_ReadTheKubeconfigAsKubectlDoes(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	for _, name := range []string{"a", "b"} {
		cfg.Clusters[name] = &clientcmdapi.Cluster{Server: "https://" + name + ".example:6443"}
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: "token-" + name}
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "ns-" + name}
	}
	cfg.CurrentContext = "a"
	if err := clientcmd.WriteToFile(*cfg, kc); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		args              []string
		wantHost, wantNS  string
		wantToken, wantAs string
	}{
		{args: nil, wantHost: "https://a.example:6443", wantNS: "ns-a", wantToken: "token-a"},
		{args: []string{"--context", "b"}, wantHost: "https://b.example:6443", wantNS: "ns-b", wantToken: "token-b"},
		{args: []string{"-n", "other"}, wantHost: "https://a.example:6443", wantNS: "other", wantToken: "token-a"},
		{args: []string{"--context", "b", "--namespace", "x", "--as", "alice", "-s", "https://c.example"}, wantHost: "https://c.example", wantNS: "x", wantToken: "token-b", wantAs: "alice"},
	} {
		f := newConnectionFlags()
		fs := pflag.NewFlagSet("verb", pflag.ContinueOnError)
		f.bind(fs)
		if err := fs.Parse(append([]string{"--kubeconfig", kc}, tc.args...)); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		rc, err := f.loader().ClientConfig()
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		ns, _, err := f.loader().Namespace()
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if rc.Host != tc.wantHost || ns != tc.wantNS || rc.BearerToken != tc.wantToken || rc.Impersonate.UserName != tc.wantAs {
			t.Errorf("%v: host %q namespace %q token %q as %q, want %q %q %q %q", tc.args, rc.Host, ns, rc.BearerToken, rc.Impersonate.UserName, tc.wantHost, tc.wantNS, tc.wantToken, tc.wantAs)
		}
	}
}
