package gang

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// What discovery answers about scheduling.k8s.io/v1alpha2, as data.
var (
	servedWithPodGroups = &metav1.APIResourceList{GroupVersion: "scheduling.k8s.io/v1alpha2", APIResources: []metav1.APIResource{
		{Name: "podgroups", Namespaced: true, Kind: "PodGroup"}, {Name: "podgroups/status"}, {Name: "workloads", Namespaced: true, Kind: "Workload"},
	}}
	servedWithoutPodGroups = &metav1.APIResourceList{GroupVersion: "scheduling.k8s.io/v1alpha2", APIResources: []metav1.APIResource{
		{Name: "workloads", Namespaced: true, Kind: "Workload"},
	}}
	notServed      = apierrors.NewNotFound(schema.GroupResource{Group: "scheduling.k8s.io"}, "v1alpha2")
	errUnreachable = errors.New("connection refused")
)

func TestChoose_AutoFollowsDiscoveryAndForcedBackendsAreKept(t *testing.T) {
	cases := []struct {
		mode         string
		resources    *metav1.APIResourceList
		discoveryErr error
		want         string
		wantErr      []string // words the error must contain
	}{
		{mode: "auto", resources: servedWithPodGroups, want: "native"},
		{mode: "auto", discoveryErr: notServed, want: "none"},
		{mode: "auto", resources: servedWithoutPodGroups, want: "none"},
		{mode: "native", resources: servedWithPodGroups, want: "native"},
		{mode: "none", resources: servedWithPodGroups, want: "none"},
		{mode: "none", discoveryErr: errUnreachable, want: "none"},
		{mode: "native", discoveryErr: notServed, wantErr: []string{
			"scheduling.k8s.io/v1alpha2", "podgroups", "GenericWorkload=true", "GangScheduling=true", "--runtime-config=scheduling.k8s.io/v1alpha2=true", "--gang-backend=none",
		}},
		{mode: "native", resources: servedWithoutPodGroups, wantErr: []string{"podgroups", "GangScheduling=true"}},
		// Not knowing is not the same as "not served": auto must not quietly
		// drop gang scheduling because the apiserver blinked.
		{mode: "auto", discoveryErr: errUnreachable, wantErr: []string{"connection refused"}},
		{mode: "volcano", resources: servedWithPodGroups, wantErr: []string{`"volcano"`, "auto, native or none"}},
		{mode: "", resources: servedWithPodGroups, wantErr: []string{"auto, native or none"}},
	}
	for _, tc := range cases {
		got, err := choose(tc.mode, tc.resources, tc.discoveryErr)
		if len(tc.wantErr) == 0 {
			if err != nil || got != tc.want {
				t.Errorf("choose(%q, %v, %v) = %q, %v; want %q", tc.mode, tc.resources != nil, tc.discoveryErr, got, err, tc.want)
			}
			continue
		}
		if err == nil {
			t.Errorf("choose(%q, %v, %v) = %q, want an error", tc.mode, tc.resources != nil, tc.discoveryErr, got)
			continue
		}
		for _, w := range tc.wantErr {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("choose(%q, ...) error %q does not mention %q", tc.mode, err, w)
			}
		}
	}
}

func TestSelect_OnAServerWithPodGroups(t *testing.T) {
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	for mode, want := range map[string]string{"auto": "native", "native": "native", "none": "none"} {
		b, err := Select(dc, mode, Options{Client: env.Client})
		if err != nil || b.Name() != want {
			t.Errorf("Select(%s) = %v, %v; want the %s backend", mode, b, err, want)
		}
	}
}

// The real apiserver's answer for a group version it does not serve is the
// NotFound that choose takes as "not served".
func TestChoose_ReadsTheServersAnswerForAnUnservedAPI(t *testing.T) {
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	resources, discoveryErr := dc.ServerResourcesForGroupVersion("scheduling.k8s.io/v1alpha9")
	if got, err := choose("auto", resources, discoveryErr); err != nil || got != NameNone {
		t.Errorf("auto on an unserved API: %q, %v; want none", got, err)
	}
	if _, err := choose("native", resources, discoveryErr); err == nil {
		t.Error("native on an unserved API: no error")
	}
}
