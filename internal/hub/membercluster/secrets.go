package membercluster

import (
	"context"
	"maps"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// secretCopy is the data of one kubeconfig Secret at one resourceVersion.
type secretCopy struct {
	resourceVersion string
	data            map[string][]byte
}

// secretCopies keeps the data of the Secrets MemberClusters name, and nothing
// else: the hub's cache holds Secrets' metadata only.
type secretCopies struct {
	mu    sync.Mutex
	byKey map[client.ObjectKey]secretCopy
}

// secretData returns the data of a kubeconfig Secret. The cached metadata says
// whether the copy kept is current; a Secret is read past the cache only when
// its resourceVersion moved, not on every probe.
func (r *Reconciler) secretData(ctx context.Context, key client.ObjectKey) (map[string][]byte, error) {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := r.Client.Get(ctx, key, meta); err != nil {
		r.secrets.forget(key)
		return nil, err
	}
	if data, ok := r.secrets.get(key, meta.ResourceVersion); ok {
		return data, nil
	}
	reader := r.SecretReader
	if reader == nil {
		reader = r.Client
	}
	var s corev1.Secret
	if err := reader.Get(ctx, key, &s); err != nil {
		return nil, err
	}
	r.secrets.put(key, s.ResourceVersion, s.Data)
	return s.Data, nil
}

func (c *secretCopies) get(key client.ObjectKey, resourceVersion string) (map[string][]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.byKey[key]
	if !ok || s.resourceVersion != resourceVersion {
		return nil, false
	}
	return s.data, true
}

func (c *secretCopies) put(key client.ObjectKey, resourceVersion string, data map[string][]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKey == nil {
		c.byKey = map[client.ObjectKey]secretCopy{}
	}
	c.byKey[key] = secretCopy{resourceVersion: resourceVersion, data: maps.Clone(data)}
}

func (c *secretCopies) forget(key client.ObjectKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byKey, key)
}
