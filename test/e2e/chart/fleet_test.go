//go:build e2e

package chart

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/devwebhook"
	"github.com/lockstep-dev/lockstep/test/e2e/cluster"
)

// TestChart_ShipsTheFleet installs the chart as a hub that is also a member of
// its own fleet (hub.enabled, member.enabled) and runs `lockstep hub` with
// exactly what the chart grants: the hub ServiceAccount's token, the fleet
// webhook configuration the chart installed (pointed at the host process, as
// kwok runs no containers) and the member ServiceAccount's token as the
// member kubeconfig. A MemberCluster, a cluster set, a Placement and a
// FederatedWorkload then roll a Deployment out, and invalid objects are
// rejected by the chart's webhook configuration.
func TestChart_ShipsTheFleet(t *testing.T) {
	ctx := t.Context()
	c, err := cluster.Start(ctx, cluster.Options{Name: "lockstep-helm-fleet-e2e", DevDir: ".dev/helm-fleet-e2e", Nodes: 1})
	if err != nil {
		t.Fatalf("starting the cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Errorf("stopping the cluster: %v", err)
		}
	})
	chart := filepath.Join(c.Root, "charts", "lockstep")
	if out, err := runHelm(ctx, c, "install", release, chart, "--namespace", namespace, "--create-namespace", "--wait", "--timeout", "3m",
		"--set", "hub.enabled=true", "--set", "member.enabled=true", "--set", "replicaCount=1", "--set", "podDisruptionBudget.enabled=false"); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, fleetv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	admin, err := client.New(c.RESTConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}

	// The hub, as the chart's hub ServiceAccount, serving the webhooks of the
	// chart's fleet webhook configuration.
	dir := t.TempDir()
	hubKubeconfig := filepath.Join(dir, "hub.kubeconfig")
	writeKubeconfig(t, hubKubeconfig, c.RESTConfig.Host, clusterCA(t, c), serviceAccountToken(t, c, "lockstep-hub"))
	certDir := filepath.Join(dir, "certs")
	if err := devwebhook.WriteServingCert(certDir, "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	pointWebhooksAt(t, admin, "lockstep-fleet-validating-webhook-configuration", fmt.Sprintf("https://127.0.0.1:%d", port), filepath.Join(certDir, "ca.crt"))
	startHub(t, c, dir, "--kubeconfig", hubKubeconfig, "--fleet-namespace", namespace,
		"--cert-secret=", "--webhook-cert-dir", certDir, fmt.Sprintf("--webhook-port=%d", port),
		"--leader-elect=true", "--leader-election-namespace", namespace,
		"--metrics-bind-address=0", fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", freePort(t)),
		"--member-probe-interval=1s")

	// The chart's fleet webhook configuration rejects what the hub's
	// admission refuses, naming the field.
	outside := &fleetv1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "outside"},
		Spec: fleetv1alpha1.MemberClusterSpec{KubeconfigSecretRef: fleetv1alpha1.KubeconfigSecretReference{
			Namespace: "default", Name: "self"}},
	}
	expectRejected(t, admin, outside, "spec.kubeconfigSecretRef.namespace")

	// The cluster is its own member, reached with the chart's member identity.
	tokenSecret := &corev1.Secret{}
	poll(t, time.Minute, "the member token Secret is filled", func() (bool, string) {
		err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "lockstep-fleet-member-token"}, tokenSecret)
		return err == nil && len(tokenSecret.Data["token"]) > 0, fmt.Sprint(err)
	})
	memberKubeconfig := filepath.Join(dir, "member.kubeconfig")
	writeKubeconfig(t, memberKubeconfig, c.RESTConfig.Host, tokenSecret.Data["ca.crt"], string(tokenSecret.Data["token"]))
	raw, err := os.ReadFile(memberKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	tenant := "tenant"
	for _, o := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "self"}, Data: map[string][]byte{"kubeconfig": raw}},
		&fleetv1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "self", Labels: map[string]string{"env": "e2e"}},
			Spec: fleetv1alpha1.MemberClusterSpec{KubeconfigSecretRef: fleetv1alpha1.KubeconfigSecretReference{
				Namespace: namespace, Name: "self"}},
		},
		&fleetv1alpha1.MemberClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenant}},
		&fleetv1alpha1.MemberClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "default"},
			Spec: fleetv1alpha1.MemberClusterSetBindingSpec{ClusterSet: "default"}},
		&fleetv1alpha1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "all"}},
	} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	fw := &fleetv1alpha1.FederatedWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "web"},
		Spec: fleetv1alpha1.FederatedWorkloadSpec{
			PlacementRef: fleetv1alpha1.PlacementReference{Name: "all"},
			Replicas:     2,
			Template:     runtime.RawExtension{Raw: []byte(webDeployment)},
		},
	}
	invalid := fw.DeepCopy()
	invalid.Name = "invalid"
	invalid.Spec.Template.Raw = []byte(`{"apiVersion": "v1", "kind": "ConfigMap"}`)
	expectRejected(t, admin, invalid, "unsupported kind v1 ConfigMap")
	if err := admin.Create(ctx, fw); err != nil {
		t.Fatalf("creating the FederatedWorkload: %v", err)
	}

	mc := &fleetv1alpha1.MemberCluster{}
	poll(t, time.Minute, "the member is Ready", func() (bool, string) {
		if err := admin.Get(ctx, client.ObjectKey{Name: "self"}, mc); err != nil {
			return false, err.Error()
		}
		ready := meta.FindStatusCondition(mc.Status.Conditions, string(fleetv1alpha1.MemberClusterReady))
		return ready != nil && ready.Status == metav1.ConditionTrue, fmt.Sprintf("%+v", ready)
	})
	dep := &appsv1.Deployment{}
	poll(t, 2*time.Minute, "the FederatedWorkload's Deployment is available in the member", func() (bool, string) {
		if err := admin.Get(ctx, client.ObjectKey{Namespace: tenant, Name: "web"}, dep); err != nil {
			return false, err.Error()
		}
		if err := admin.Get(ctx, client.ObjectKeyFromObject(fw), fw); err != nil {
			return false, err.Error()
		}
		return dep.Labels[fleetv1alpha1.LabelFederatedWorkload] == tenant+".web" && fw.Status.AvailableReplicas == 2,
			fmt.Sprintf("Deployment labels %v, %d available; FederatedWorkload %d available", dep.Labels, dep.Status.AvailableReplicas, fw.Status.AvailableReplicas)
	})
}

const webDeployment = `{"apiVersion": "apps/v1", "kind": "Deployment",
 "spec": {"selector": {"matchLabels": {"app": "web"}},
  "template": {"metadata": {"labels": {"app": "web"}},
   "spec": {"containers": [{"name": "web", "image": "registry.example/web:v1"}]}}}}`

// serviceAccountToken asks the apiserver for a token of a ServiceAccount of
// the release namespace.
func serviceAccountToken(t *testing.T, c *cluster.Cluster, name string) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(t.Context(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token for ServiceAccount %s: %v", name, err)
	}
	return tr.Status.Token
}

// clusterCA is the CA of the cluster's apiserver (kwokctl's kubeconfig names
// its file).
func clusterCA(t *testing.T, c *cluster.Cluster) []byte {
	t.Helper()
	if len(c.RESTConfig.CAData) > 0 {
		return c.RESTConfig.CAData
	}
	ca, err := os.ReadFile(c.RESTConfig.CAFile)
	if err != nil {
		t.Fatalf("the cluster's CA: %v", err)
	}
	return ca
}

// writeKubeconfig writes a kubeconfig that carries its CA and token as data.
func writeKubeconfig(t *testing.T, path, server string, ca []byte, token string) {
	t.Helper()
	if len(ca) == 0 {
		t.Fatalf("%s: no CA data", path)
	}
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, certificate-authority-data: %s}}]
users: [{name: u, user: {token: %q}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, server, base64.StdEncoding.EncodeToString(ca), token)
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
}

// pointWebhooksAt makes the chart's webhook configuration call url with the
// CA in caFile, as the in-cluster Service and rotator would.
func pointWebhooksAt(t *testing.T, c client.Client, name, url, caFile string) {
	t.Helper()
	ca, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	vwc := &admissionv1.ValidatingWebhookConfiguration{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: name}, vwc); err != nil {
		t.Fatalf("the chart's fleet webhook configuration: %v", err)
	}
	if len(vwc.Webhooks) == 0 {
		t.Fatalf("%s has no webhooks", name)
	}
	for i := range vwc.Webhooks {
		cc := &vwc.Webhooks[i].ClientConfig
		cc.URL = ptr.To(url + ptr.Deref(cc.Service.Path, "/"))
		cc.Service, cc.CABundle = nil, ca
	}
	if err := c.Update(t.Context(), vwc); err != nil {
		t.Fatal(err)
	}
}

// startHub builds and runs `lockstep hub` until the test ends; its log is
// printed when the test fails.
func startHub(t *testing.T, c *cluster.Cluster, dir string, args ...string) {
	t.Helper()
	binary := filepath.Join(dir, "lockstep")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", binary, "./cmd/lockstep")
	build.Dir = c.Root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	logPath := filepath.Join(dir, "hub.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, append([]string{"hub"}, args...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logFile.Close()
		if t.Failed() {
			if out, err := os.ReadFile(logPath); err == nil {
				t.Logf("hub log:\n%s", out)
			}
		}
	})
}

// expectRejected creates obj until admission answers (the hub may still be
// starting) and wants a denial that names field.
func expectRejected(t *testing.T, c client.Client, obj client.Object, field string) {
	t.Helper()
	var last error
	poll(t, time.Minute, fmt.Sprintf("%s %s rejected naming %s", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), field), func() (bool, string) {
		last = c.Create(t.Context(), obj.DeepCopyObject().(client.Object))
		if last == nil {
			t.Fatalf("%s was admitted", obj.GetName())
		}
		return strings.Contains(last.Error(), "denied the request") && strings.Contains(last.Error(), field), last.Error()
	})
	t.Logf("rejected as expected: %v", last)
}

func poll(t *testing.T, timeout time.Duration, what string, done func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := done()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; last: %s", what, timeout, state)
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
