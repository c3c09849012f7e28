package gang

import (
	"fmt"

	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
)

// podGroupResource is the resource the native backend needs the API server to serve.
const podGroupResource = "podgroups"

// Select returns the backend that mode (the operator's --gang-backend) names:
// "native", "none", or "auto", which is native when the API server serves
// scheduling.k8s.io/v1alpha2 PodGroups and none otherwise. Discovery is asked
// once, here: turning the API on later needs an operator restart.
func Select(dc discovery.ServerResourcesInterface, mode string, o Options) (Backend, error) {
	var resources *metav1.APIResourceList
	var discoveryErr error
	if mode == ModeAuto || mode == NameNative {
		resources, discoveryErr = dc.ServerResourcesForGroupVersion(schedulingv1alpha2.SchemeGroupVersion.String())
	}
	name, err := choose(mode, resources, discoveryErr)
	if err != nil {
		return nil, err
	}
	if name == NameNone {
		return None{}, nil
	}
	if o.Client == nil {
		return nil, fmt.Errorf("gang backend %s needs a client", name)
	}
	return NewNative(o), nil
}

// choose decides the backend from the mode and what discovery said about
// scheduling.k8s.io/v1alpha2 (its resources, or the error asking for them).
func choose(mode string, resources *metav1.APIResourceList, discoveryErr error) (string, error) {
	switch mode {
	case NameNone:
		return NameNone, nil
	case ModeAuto, NameNative:
	default:
		return "", fmt.Errorf("unknown gang backend %q: use %s, %s or %s", mode, ModeAuto, NameNative, NameNone)
	}
	served, err := podGroupsServed(resources, discoveryErr)
	if err != nil {
		return "", fmt.Errorf("choosing the gang backend: asking the API server for %s: %w", schedulingv1alpha2.SchemeGroupVersion, err)
	}
	switch {
	case served:
		return NameNative, nil
	case mode == ModeAuto:
		return NameNone, nil
	default:
		return "", fmt.Errorf("gang backend %s needs the API server to serve %s %s, and it does not: "+
			"turn on the feature gates GenericWorkload=true and GangScheduling=true (kube-apiserver and kube-scheduler) "+
			"and --runtime-config=%s=true (kube-apiserver), or use --gang-backend=%s",
			NameNative, schedulingv1alpha2.SchemeGroupVersion, podGroupResource, schedulingv1alpha2.SchemeGroupVersion, NameNone)
	}
}

// podGroupsServed reads a discovery answer. A group version the server does not
// serve at all comes back as NotFound; any other error is not an answer.
func podGroupsServed(resources *metav1.APIResourceList, discoveryErr error) (bool, error) {
	if discoveryErr != nil {
		if apierrors.IsNotFound(discoveryErr) {
			return false, nil
		}
		return false, discoveryErr
	}
	if resources == nil {
		return false, nil
	}
	for _, r := range resources.APIResources {
		if r.Name == podGroupResource {
			return true, nil
		}
	}
	return false, nil
}
