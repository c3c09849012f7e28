package members

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// groupVersionMapper is the REST mapper of a member connection. It learns
// the resources of one group version (GET /apis/<group>/<version>) the first
// time a kind of it is looked up, and keeps nothing else. The hub uses a few
// kinds of two or three group versions in each member; controller-runtime's
// default mapper loads a member's whole discovery at its first lookup, about
// 200 KB held per connection, 200 MB at a thousand members.
//
// A group version the member does not serve is a no-match error (and asked
// again at the next lookup, so a CRD installed later is found). A lookup
// without a version (which the hub does not make) asks the member for the
// group's preferred version first.
type groupVersionMapper struct {
	disc discovery.DiscoveryInterface

	mu     sync.RWMutex
	known  map[schema.GroupVersion]bool
	mapper *meta.DefaultRESTMapper
}

var _ meta.RESTMapper = (*groupVersionMapper)(nil)

// DiscoveryTimeout bounds each discovery request of a member connection's
// mapper. A mapping is looked up before a request is sent, outside the
// request's context, so without it a member that accepts connections and
// never answers would hold the round (and the hub's shutdown) for good.
var DiscoveryTimeout = 10 * time.Second

// newGroupVersionMapper is a cluster.Options.MapperProvider. Its requests go
// through the connection's transport under their own timeout.
func newGroupVersionMapper(cfg *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
	timed := *httpClient
	timed.Timeout = DiscoveryTimeout
	disc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, &timed)
	if err != nil {
		return nil, err
	}
	return newGroupVersionMapperFor(disc), nil
}

func newGroupVersionMapperFor(disc discovery.DiscoveryInterface) *groupVersionMapper {
	return &groupVersionMapper{disc: disc, known: map[schema.GroupVersion]bool{}, mapper: meta.NewDefaultRESTMapper(nil)}
}

// learn makes sure the resources of gv are known, asking the member once.
func (m *groupVersionMapper) learn(gv schema.GroupVersion) error {
	m.mu.RLock()
	known := m.known[gv]
	m.mu.RUnlock()
	if known {
		return nil
	}
	list, err := m.disc.ServerResourcesForGroupVersion(gv.String())
	if apierrors.IsNotFound(err) {
		return &meta.NoResourceMatchError{PartialResource: gv.WithResource("")}
	}
	if err != nil {
		return fmt.Errorf("discovering %s: %w", gv, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.known[gv] {
		return nil
	}
	for _, r := range list.APIResources {
		if strings.Contains(r.Name, "/") { // a subresource
			continue
		}
		scope := meta.RESTScopeRoot
		if r.Namespaced {
			scope = meta.RESTScopeNamespace
		}
		singular := r.SingularName
		if singular == "" {
			singular = strings.ToLower(r.Kind)
		}
		m.mapper.AddSpecific(gv.WithKind(r.Kind), gv.WithResource(r.Name), gv.WithResource(singular), scope)
	}
	m.known[gv] = true
	return nil
}

// learnGroup learns the versions asked for, or the group's preferred one,
// and returns the versions it learned.
func (m *groupVersionMapper) learnGroup(group string, versions ...string) ([]string, error) {
	versions = nonEmpty(versions)
	if len(versions) == 0 {
		v, err := m.preferred(group)
		if err != nil {
			return nil, err
		}
		versions = []string{v}
	}
	for _, v := range versions {
		if err := m.learn(schema.GroupVersion{Group: group, Version: v}); err != nil {
			return nil, err
		}
	}
	return versions, nil
}

func (m *groupVersionMapper) preferred(group string) (string, error) {
	if group == "" {
		return "v1", nil
	}
	groups, err := m.disc.ServerGroups()
	if err != nil {
		return "", fmt.Errorf("discovering the groups: %w", err)
	}
	for _, g := range groups.Groups {
		if g.Name == group {
			return g.PreferredVersion.Version, nil
		}
	}
	return "", &meta.NoResourceMatchError{PartialResource: schema.GroupVersionResource{Group: group}}
}

func nonEmpty(versions []string) []string {
	var out []string
	for _, v := range versions {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

func (m *groupVersionMapper) learnResource(r schema.GroupVersionResource) error {
	_, err := m.learnGroup(r.Group, r.Version)
	return err
}

// byResource answers a lookup by resource with what f says once r's group
// version is learned.
func byResource[T any](m *groupVersionMapper, r schema.GroupVersionResource, f func(schema.GroupVersionResource) (T, error)) (T, error) {
	if err := m.learnResource(r); err != nil {
		var zero T
		return zero, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return f(r)
}

// KindFor implements meta.RESTMapper.
func (m *groupVersionMapper) KindFor(r schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	return byResource(m, r, m.mapper.KindFor)
}

// KindsFor implements meta.RESTMapper.
func (m *groupVersionMapper) KindsFor(r schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	return byResource(m, r, m.mapper.KindsFor)
}

// ResourceFor implements meta.RESTMapper.
func (m *groupVersionMapper) ResourceFor(r schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	return byResource(m, r, m.mapper.ResourceFor)
}

// ResourcesFor implements meta.RESTMapper.
func (m *groupVersionMapper) ResourcesFor(r schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	return byResource(m, r, m.mapper.ResourcesFor)
}

// byKind answers a lookup by kind with what f says once the versions asked
// for (or the group's preferred one) are learned.
func byKind[T any](m *groupVersionMapper, gk schema.GroupKind, versions []string, f func(schema.GroupKind, ...string) (T, error)) (T, error) {
	versions, err := m.learnGroup(gk.Group, versions...)
	if err != nil {
		var zero T
		return zero, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return f(gk, versions...)
}

// RESTMapping implements meta.RESTMapper.
func (m *groupVersionMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	return byKind(m, gk, versions, m.mapper.RESTMapping)
}

// RESTMappings implements meta.RESTMapper.
func (m *groupVersionMapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	return byKind(m, gk, versions, m.mapper.RESTMappings)
}

// ResourceSingularizer implements meta.RESTMapper: over what it has learned.
func (m *groupVersionMapper) ResourceSingularizer(resource string) (string, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.mapper.ResourceSingularizer(resource)
}
