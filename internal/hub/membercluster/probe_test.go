package membercluster

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
)

// apiserver answers like a member's apiserver, with the given /readyz status
// and the given status for everything else (200: version and discovery).
func apiserver(t *testing.T, readyz, rest int) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status := rest
		if r.URL.Path == "/readyz" {
			status = readyz
		}
		if status != http.StatusOK {
			w.WriteHeader(status)
			_, _ = w.Write([]byte("[+]ping ok\n[-]etcd failed: reason withheld\nreadyz check failed\n"))
			return
		}
		var body any
		switch r.URL.Path {
		case "/readyz":
			_, _ = w.Write([]byte("ok"))
			return
		case "/version":
			body = map[string]string{"gitVersion": "v1.36.3"}
		case "/apis/apps/v1":
			body = metav1.APIResourceList{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment"}}}
		default:
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(s.Close)
	return s
}

func TestProbe_ReasonNamesTheStepThatFailed(t *testing.T) {
	cases := []struct {
		name          string
		readyz, other int
		reason        fleetv1alpha1.MemberClusterReason
	}{
		{"answers", http.StatusOK, http.StatusOK, fleetv1alpha1.MemberClusterReasonReachable},
		{"readyz fails", http.StatusInternalServerError, http.StatusOK, fleetv1alpha1.MemberClusterReasonAPIServerNotReady},
		{"credentials rejected", http.StatusUnauthorized, http.StatusUnauthorized, fleetv1alpha1.MemberClusterReasonUnauthorized},
		{"forbidden discovery", http.StatusOK, http.StatusForbidden, fleetv1alpha1.MemberClusterReasonUnauthorized},
		{"discovery fails", http.StatusOK, http.StatusInternalServerError, fleetv1alpha1.MemberClusterReasonDiscoveryFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := apiserver(t, tc.readyz, tc.other)
			p := probeMember(context.Background(), &rest.Config{Host: s.URL}, time.Second)
			if p.Reason != tc.reason {
				t.Fatalf("reason %s (%s), want %s", p.Reason, p.Message, tc.reason)
			}
			if tc.reason == fleetv1alpha1.MemberClusterReasonAPIServerNotReady && p.Message != s.URL+"/readyz failed: [-]etcd failed: reason withheld" {
				t.Errorf("message %q does not name the failing check", p.Message)
			}
			if tc.reason == fleetv1alpha1.MemberClusterReasonReachable &&
				(p.KubernetesVersion != "v1.36.3" || !slices.Equal(p.WorkloadKinds, []string{"Deployment"})) {
				t.Errorf("version %q, kinds %v; want v1.36.3 and [Deployment]", p.KubernetesVersion, p.WorkloadKinds)
			}
		})
	}
	t.Run("nobody listens", func(t *testing.T) {
		s := apiserver(t, http.StatusOK, http.StatusOK)
		s.Close()
		if p := probeMember(context.Background(), &rest.Config{Host: s.URL}, time.Second); p.Reason != fleetv1alpha1.MemberClusterReasonUnreachable {
			t.Errorf("reason %s (%s), want Unreachable", p.Reason, p.Message)
		}
	})
}
