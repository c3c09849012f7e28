package membercluster

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// countingReader counts the reads that go past the cache.
type countingReader struct {
	client.Reader
	gets int
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets++
	return c.Reader.Get(ctx, key, obj, opts...)
}

// A kubeconfig Secret is read past the cache once per resourceVersion, not on
// every probe; a change is read again, a deletion is reported.
func TestSecretData_ReadsASecretOncePerVersion(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	key := client.ObjectKey{Namespace: "fleet", Name: "m1"}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Data:       map[string][]byte{"kubeconfig": []byte("one")},
	}).Build()
	live := &countingReader{Reader: c}
	r := &Reconciler{Client: c, SecretReader: live}

	for range 3 {
		data, err := r.secretData(ctx, key)
		if err != nil || string(data["kubeconfig"]) != "one" {
			t.Fatalf("secretData = %q, %v", data["kubeconfig"], err)
		}
	}
	if live.gets != 1 {
		t.Fatalf("%d reads past the cache for 3 probes of one version, want 1", live.gets)
	}

	var s corev1.Secret
	if err := c.Get(ctx, key, &s); err != nil {
		t.Fatal(err)
	}
	s.Data["kubeconfig"] = []byte("two")
	if err := c.Update(ctx, &s); err != nil {
		t.Fatal(err)
	}
	if data, err := r.secretData(ctx, key); err != nil || string(data["kubeconfig"]) != "two" || live.gets != 2 {
		t.Fatalf("after an update: %q, %v, %d reads; want two, read once more", data["kubeconfig"], err, live.gets)
	}

	if err := c.Delete(ctx, &s); err != nil {
		t.Fatal(err)
	}
	if _, err := r.secretData(ctx, key); !apierrors.IsNotFound(err) {
		t.Fatalf("after the deletion: %v, want NotFound", err)
	}
}
