package membercluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Probe is what one look at a member found.
type Probe struct {
	// Reason is the Ready condition's reason: MemberClusterReasonReachable when
	// the member answered, else the step that failed.
	Reason  fleetv1alpha1.MemberClusterReason
	Message string
	// KubernetesVersion and WorkloadKinds are set when Reason is Reachable.
	KubernetesVersion string
	WorkloadKinds     []string
}

// Ready says whether the member answered /readyz and discovery.
func (p Probe) Ready() bool { return p.Reason == fleetv1alpha1.MemberClusterReasonReachable }

// workloadKind is a kind the hub can place in a member, and where discovery
// finds it.
type workloadKind struct {
	groupVersion, resource, kind string
}

// workloadKinds are listed in the order status.workloadKinds keeps.
var workloadKinds = []workloadKind{
	{"apps/v1", "deployments", "Deployment"},
	{"apps/v1", "statefulsets", "StatefulSet"},
	{v1alpha1.GroupVersion.String(), "podcliquesets", "PodCliqueSet"},
}

// probeMember asks the member's apiserver /readyz, its version and which
// workload kinds it serves, each request bounded by timeout.
func probeMember(ctx context.Context, cfg *rest.Config, timeout time.Duration) Probe {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = timeout
	ctx, cancel := context.WithTimeout(ctx, 3*timeout)
	defer cancel()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return Probe{Reason: fleetv1alpha1.MemberClusterReasonKubeconfigInvalid, Message: fmt.Sprintf("building a client from the kubeconfig: %v", err)}
	}
	body, err := dc.RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		if p, failed := requestFailure(err, cfg.Host); failed {
			return p
		}
		return Probe{Reason: fleetv1alpha1.MemberClusterReasonAPIServerNotReady,
			Message: fmt.Sprintf("%s/readyz failed: %s", cfg.Host, firstLine(body, err))}
	}
	version, err := dc.ServerVersion()
	if err != nil {
		return discoveryFailure(err, cfg.Host, "reading the server version")
	}
	var kinds []string
	for _, wk := range workloadKinds {
		served, err := serves(dc, wk)
		if err != nil {
			return discoveryFailure(err, cfg.Host, "discovering "+wk.groupVersion)
		}
		if served {
			kinds = append(kinds, wk.kind)
		}
	}
	return Probe{
		Reason:            fleetv1alpha1.MemberClusterReasonReachable,
		Message:           fmt.Sprintf("%s answers /readyz and discovery", cfg.Host),
		KubernetesVersion: version.GitVersion,
		WorkloadKinds:     kinds,
	}
}

// serves says whether the member serves the kind; a group version it does not
// serve at all is no error.
func serves(dc discovery.DiscoveryInterface, wk workloadKind) (bool, error) {
	list, err := dc.ServerResourcesForGroupVersion(wk.groupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == wk.resource }), nil
}

// requestFailure classifies an error that is not an answer about readiness:
// rejected credentials or no answer at all. It returns false for an HTTP answer
// of another kind.
func requestFailure(err error, host string) (Probe, bool) {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		switch code := status.Status().Code; code {
		case http.StatusUnauthorized, http.StatusForbidden:
			return Probe{Reason: fleetv1alpha1.MemberClusterReasonUnauthorized,
				Message: fmt.Sprintf("%s rejected the kubeconfig's credentials (HTTP %d): %s", host, code, status.Status().Message)}, true
		case 0:
		default:
			return Probe{}, false
		}
	}
	return Probe{Reason: fleetv1alpha1.MemberClusterReasonUnreachable, Message: fmt.Sprintf("cannot reach %s: %v", host, err)}, true
}

func discoveryFailure(err error, host, doing string) Probe {
	if p, failed := requestFailure(err, host); failed {
		return p
	}
	return Probe{Reason: fleetv1alpha1.MemberClusterReasonDiscoveryFailed, Message: fmt.Sprintf("%s on %s: %v", doing, host, err)}
}

// firstLine is a short account of a failed /readyz: the first failing check
// the body names, else the error.
func firstLine(body []byte, err error) string {
	for line := range strings.Lines(string(body)) {
		if strings.HasPrefix(line, "[-]") {
			return strings.TrimSpace(line)
		}
	}
	return err.Error()
}
