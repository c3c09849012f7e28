package membercluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// dataOnlyKubeconfig is what a hub accepts by default: everything embedded.
const dataOnlyKubeconfig = `apiVersion: v1
kind: Config
current-context: m1
contexts:
- name: m1
  context: {cluster: m1, user: m1-admin}
- name: other
  context: {cluster: other, user: other-user}
clusters:
- name: m1
  cluster:
    server: https://m1.example:6443
    certificate-authority-data: Y2E=
- name: other
  cluster:
    server: https://other.example:6443
    insecure-skip-tls-verify: true
users:
- name: m1-admin
  user:
    token: abc
    client-certificate-data: Y2VydA==
    client-key-data: a2V5
- name: other-user
  user:
    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, interactiveMode: Never}
`

func loadKubeconfig(t *testing.T, edit func(*clientcmdapi.Config)) *clientcmdapi.Config {
	t.Helper()
	cfg, err := clientcmd.Load([]byte(dataOnlyKubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(cfg)
	}
	return cfg
}

func user(edit func(*clientcmdapi.AuthInfo)) func(*clientcmdapi.Config) {
	return func(c *clientcmdapi.Config) { edit(c.AuthInfos["m1-admin"]) }
}

func cluster(edit func(*clientcmdapi.Cluster)) func(*clientcmdapi.Config) {
	return func(c *clientcmdapi.Config) { edit(c.Clusters["m1"]) }
}

func TestCheckKubeconfig(t *testing.T) {
	var (
		none     = KubeconfigPolicy{}
		exec     = KubeconfigPolicy{AllowExec: true}
		insecure = KubeconfigPolicy{AllowInsecureTLS: true}
	)
	exe := user(func(u *clientcmdapi.AuthInfo) {
		u.Exec = &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/sh", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
	})
	provider := user(func(u *clientcmdapi.AuthInfo) {
		u.AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc", Config: map[string]string{"idp-issuer-url": "https://idp.example"}}
	})
	tokenFile := user(func(u *clientcmdapi.AuthInfo) {
		u.Token, u.TokenFile = "", "/var/run/secrets/kubernetes.io/serviceaccount/token"
	})
	certPath := user(func(u *clientcmdapi.AuthInfo) { u.ClientCertificateData, u.ClientCertificate = nil, "/etc/hub/tls.crt" })
	keyPath := user(func(u *clientcmdapi.AuthInfo) { u.ClientKeyData, u.ClientKey = nil, "/etc/hub/tls.key" })
	caPath := cluster(func(c *clientcmdapi.Cluster) {
		c.CertificateAuthorityData, c.CertificateAuthority = nil, "/etc/hub/ca.crt"
	})
	insecureTLS := cluster(func(c *clientcmdapi.Cluster) { c.CertificateAuthorityData, c.InsecureSkipTLSVerify = nil, true })

	const u, c = `users["m1-admin"].user.`, `clusters["m1"].cluster.`
	cases := []struct {
		name   string
		edit   func(*clientcmdapi.Config)
		policy KubeconfigPolicy
		// want is the whole message of a refusal, or its start; "" passes.
		want string
	}{
		{"data only", nil, none, ""},
		{"exec plugin", exe, none, u + "exec: exec plugins are not allowed (the hub runs no command"},
		{"auth provider", provider, none, u + "auth-provider: auth providers are not allowed ("},
		{"tokenFile", tokenFile, none, u + "tokenFile: file references are not allowed (the hub reads no files named by a kubeconfig; embed the data or start the hub with --allow-kubeconfig-exec)"},
		{"client-certificate path", certPath, none, u + "client-certificate: file references are not allowed ("},
		{"client-key path", keyPath, none, u + "client-key: file references are not allowed ("},
		{"certificate-authority path", caPath, none, c + "certificate-authority: file references are not allowed ("},
		{"insecure TLS", insecureTLS, none, c + "insecure-skip-tls-verify: true is not allowed (the hub verifies"},

		{"exec plugin with AllowExec", exe, exec, ""},
		{"auth provider with AllowExec", provider, exec, ""},
		{"tokenFile with AllowExec", tokenFile, exec, ""},
		{"client-certificate path with AllowExec", certPath, exec, ""},
		{"client-key path with AllowExec", keyPath, exec, ""},
		{"certificate-authority path with AllowExec", caPath, exec, ""},
		{"insecure TLS with AllowInsecureTLS", insecureTLS, insecure, ""},
		// Each option opens only its own forms.
		{"insecure TLS with AllowExec", insecureTLS, exec, c + "insecure-skip-tls-verify: true is not allowed"},
		{"tokenFile with AllowInsecureTLS", tokenFile, insecure, u + "tokenFile: file references are not allowed"},
		{"every refused form at once", func(cfg *clientcmdapi.Config) {
			for _, e := range []func(*clientcmdapi.Config){exe, provider, tokenFile, certPath, keyPath, caPath, insecureTLS} {
				e(cfg)
			}
		}, none, c + "certificate-authority: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := loadKubeconfig(t, tc.edit)
			err := CheckKubeconfig(cfg, tc.policy)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var rejected *KubeconfigRejectedError
			if !errors.As(err, &rejected) {
				t.Fatalf("error %v (%T), want a *KubeconfigRejectedError", err, err)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error\n  %s\nwant it to start with\n  %s", err, tc.want)
			}
			// The same refusal through the bytes a Secret holds: the YAML field
			// names are the ones parsed.
			data, werr := clientcmd.Write(*cfg)
			if werr != nil {
				t.Fatal(werr)
			}
			rc, err := restConfigFromKubeconfig(data, tc.policy)
			if rc != nil || !errors.As(err, &rejected) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("restConfigFromKubeconfig = %v, %v; want no config and %q", rc, err, tc.want)
			}
		})
	}

	t.Run("every refused form is named", func(t *testing.T) {
		cfg := loadKubeconfig(t, cases[len(cases)-1].edit)
		var rejected *KubeconfigRejectedError
		if err := CheckKubeconfig(cfg, none); !errors.As(err, &rejected) || len(rejected.Problems) != 7 {
			t.Fatalf("got %v, want 7 problems", err)
		}
		for _, f := range []string{c + "certificate-authority:", c + "insecure-skip-tls-verify:", u + "exec:", u + "auth-provider:", u + "tokenFile:", u + "client-certificate:", u + "client-key:"} {
			if !strings.Contains(rejected.Error(), f) {
				t.Errorf("%s not named in %v", f, rejected)
			}
		}
	})
}

func TestCheckKubeconfig_NeedsAUsableCurrentContext(t *testing.T) {
	cases := []struct {
		name string
		edit func(*clientcmdapi.Config)
		want string
	}{
		{"no current-context", func(c *clientcmdapi.Config) { c.CurrentContext = "" }, "current-context is not set"},
		{"current-context names no context", func(c *clientcmdapi.Config) { c.CurrentContext = "gone" }, `current-context: context "gone" is not in contexts`},
		{"the context names no cluster", func(c *clientcmdapi.Config) { c.Contexts["m1"].Cluster = "gone" }, `contexts["m1"].context.cluster: cluster "gone" is not in clusters`},
		{"the context names no user", func(c *clientcmdapi.Config) { c.Contexts["m1"].AuthInfo = "gone" }, `contexts["m1"].context.user: user "gone" is not in users`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckKubeconfig(loadKubeconfig(t, tc.edit), KubeconfigPolicy{AllowExec: true, AllowInsecureTLS: true})
			var rejected *KubeconfigRejectedError
			if err == nil || errors.As(err, &rejected) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error (not a refusal) containing %q", err, tc.want)
			}
		})
	}
	t.Run("a context without a user connects without credentials", func(t *testing.T) {
		if err := CheckKubeconfig(loadKubeconfig(t, func(c *clientcmdapi.Config) { c.Contexts["m1"].AuthInfo = "" }), KubeconfigPolicy{}); err != nil {
			t.Fatal(err)
		}
	})
}

// The client configuration is built from the checked kubeconfig: a data-only
// kubeconfig gives a client that names no file, and an allowed tokenFile is
// the one the kubeconfig names.
func TestRestConfigFromKubeconfig(t *testing.T) {
	rc, err := restConfigFromKubeconfig([]byte(dataOnlyKubeconfig), KubeconfigPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != "https://m1.example:6443" || rc.BearerToken != "abc" || string(rc.CAData) != "ca" || rc.Insecure {
		t.Errorf("host %q, token %q, CA %q, insecure %v: not the current context's", rc.Host, rc.BearerToken, rc.CAData, rc.Insecure)
	}
	if rc.BearerTokenFile != "" || rc.CAFile != "" || rc.CertFile != "" || rc.KeyFile != "" || rc.ExecProvider != nil || rc.AuthProvider != nil {
		t.Errorf("the client of a data-only kubeconfig names files or runs code: %+v", rc)
	}

	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("from-a-file"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := loadKubeconfig(t, user(func(u *clientcmdapi.AuthInfo) { u.Token, u.TokenFile = "", token }))
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := restConfigFromKubeconfig(data, KubeconfigPolicy{}); err == nil {
		t.Fatal("tokenFile accepted without AllowExec")
	}
	rc, err = restConfigFromKubeconfig(data, KubeconfigPolicy{AllowExec: true})
	if err != nil {
		t.Fatal(err)
	}
	if rc.BearerTokenFile != token {
		t.Errorf("BearerTokenFile %q, want %q", rc.BearerTokenFile, token)
	}

	if _, err := restConfigFromKubeconfig([]byte("this is not a kubeconfig: ["), KubeconfigPolicy{}); err == nil {
		t.Error("garbage accepted")
	}
}
