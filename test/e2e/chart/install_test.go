//go:build e2e

package chart

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/test/e2e/cluster"
)

const (
	release   = "lockstep"
	namespace = "lockstep-system"
)

var crdKind = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// TestChart_InstallUpgradeUninstallOnARealCluster runs helm against a real
// kube-apiserver: every object must be admitted, the operator Deployment must
// roll out (kwok plays the pods), an upgrade must keep what the certificate
// rotator wrote, and an uninstall must leave the CRDs.
func TestChart_InstallUpgradeUninstallOnARealCluster(t *testing.T) {
	ctx := t.Context()
	c, err := cluster.Start(ctx, cluster.Options{Name: "lockstep-helm-e2e", DevDir: ".dev/helm-e2e", Nodes: 2})
	if err != nil {
		t.Fatalf("starting the cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Errorf("stopping the cluster: %v", err)
		}
	})
	helm := func(args ...string) string {
		t.Helper()
		out, err := runHelm(ctx, c, args...)
		if err != nil {
			t.Fatalf("helm %v: %v\n%s", args, err, out)
		}
		return out
	}
	chart := filepath.Join(c.Root, "charts", "lockstep")

	start := time.Now()
	helm("install", release, chart, "--namespace", namespace, "--create-namespace", "--wait", "--timeout", "3m")
	t.Logf("installed in %s", time.Since(start).Round(time.Second))
	expectDeployment(t, c, "lockstep-operator", 2)
	for _, name := range []string{"podcliquesets.lockstep.dev", "podcliques.lockstep.dev", "podcliquescalinggroups.lockstep.dev"} {
		expectExists(t, c, crdKind, "", name)
	}
	for _, o := range []struct {
		gvk       schema.GroupVersionKind
		namespace string
		name      string
	}{
		{schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, "", "lockstep-operator"},
		{schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"}, "", "lockstep-operator"},
		{schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingWebhookConfiguration"}, "", "lockstep-mutating-webhook-configuration"},
		{schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"}, "", "lockstep-validating-webhook-configuration"},
		{schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"}, namespace, "lockstep-operator"},
		{schema.GroupVersionKind{Version: "v1", Kind: "Service"}, namespace, "lockstep-metrics"},
		{schema.GroupVersionKind{Version: "v1", Kind: "Service"}, namespace, "lockstep-webhook"},
	} {
		expectExists(t, c, o.gvk, o.namespace, o.name)
	}

	// What the operator's certificate rotator writes at run time (kwok runs no
	// container, so the test writes it): the upgrade must not take it away.
	secret := &corev1.Secret{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "lockstep-webhook-server-cert"}, secret); err != nil {
		t.Fatal(err)
	}
	secret.Data = map[string][]byte{"tls.crt": []byte("cert"), "tls.key": []byte("key"), "ca.crt": []byte("ca")}
	if err := c.Client.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	vwc := &unstructured.Unstructured{}
	vwc.SetGroupVersionKind(schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"})
	if err := c.Client.Get(ctx, client.ObjectKey{Name: "lockstep-validating-webhook-configuration"}, vwc); err != nil {
		t.Fatal(err)
	}
	webhooks, _, _ := unstructured.NestedSlice(vwc.Object, "webhooks")
	for _, w := range webhooks {
		_ = unstructured.SetNestedField(w.(map[string]any), "Q0EK", "clientConfig", "caBundle")
	}
	_ = unstructured.SetNestedSlice(vwc.Object, webhooks, "webhooks")
	if err := c.Client.Update(ctx, vwc); err != nil {
		t.Fatal(err)
	}

	start = time.Now()
	helm("upgrade", release, chart, "--namespace", namespace, "--wait", "--timeout", "3m",
		"--set", "replicaCount=3", "--set", "logLevel=debug", "--set", "metrics.dashboard.enabled=true", "--set", "hub.enabled=true")
	t.Logf("upgraded in %s", time.Since(start).Round(time.Second))
	expectDeployment(t, c, "lockstep-operator", 3)
	expectDeployment(t, c, "lockstep-hub", 1)
	expectExists(t, c, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, namespace, "lockstep-dashboard")
	if err := c.Client.Get(ctx, client.ObjectKeyFromObject(secret), secret); err != nil {
		t.Fatal(err)
	}
	if string(secret.Data["tls.crt"]) != "cert" {
		t.Errorf("the upgrade dropped the rotator's certificate: %v", secret.Data)
	}
	if err := c.Client.Get(ctx, client.ObjectKeyFromObject(vwc), vwc); err != nil {
		t.Fatal(err)
	}
	webhooks, _, _ = unstructured.NestedSlice(vwc.Object, "webhooks")
	for _, w := range webhooks {
		if ca, _, _ := unstructured.NestedString(w.(map[string]any), "clientConfig", "caBundle"); ca != "Q0EK" {
			t.Errorf("the upgrade dropped the injected CA of webhook %v", w.(map[string]any)["name"])
		}
	}

	helm("uninstall", release, "--namespace", namespace, "--wait", "--timeout", "2m")
	for _, name := range []string{"lockstep-operator", "lockstep-hub"} {
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
			t.Errorf("Deployment %s after uninstall: %v, want NotFound", name, err)
		}
	}
	for _, name := range []string{
		"podcliquesets.lockstep.dev", "podcliques.lockstep.dev", "podcliquescalinggroups.lockstep.dev",
		"memberclusters.fleet.lockstep.dev", "placements.fleet.lockstep.dev", "placementdecisions.fleet.lockstep.dev",
	} {
		expectExists(t, c, crdKind, "", name)
	}
}

func runHelm(ctx context.Context, c *cluster.Cluster, args ...string) (string, error) {
	home, err := os.MkdirTemp("", "lockstep-helm-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(home)
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(c.Bin, "helm"), append(args, "--kubeconfig", c.Kubeconfig)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	if err := cmd.Run(); err != nil {
		if _, statErr := os.Stat(cmd.Path); statErr != nil {
			err = errors.Join(err, fmt.Errorf("%w (run 'make bin/helm')", statErr))
		}
		return out.String(), err
	}
	return out.String(), nil
}

func expectDeployment(t *testing.T, c *cluster.Cluster, name string, replicas int32) {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := c.Client.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: name}, d); err != nil {
		t.Fatalf("Deployment %s: %v", name, err)
	}
	if d.Status.ReadyReplicas != replicas || d.Status.UpdatedReplicas != replicas {
		t.Fatalf("Deployment %s: %d ready, %d updated after helm --wait, want %d", name, d.Status.ReadyReplicas, d.Status.UpdatedReplicas, replicas)
	}
}

func expectExists(t *testing.T, c *cluster.Cluster, gvk schema.GroupVersionKind, namespace, name string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := c.Client.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
		t.Errorf("%s %s: %v", gvk.Kind, name, err)
	}
}
