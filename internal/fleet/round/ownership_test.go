package round

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
)

func TestConflictOf_OnlyTheWorkloadsOwnLabelMakesAnObjectItsOwn(t *testing.T) {
	fw := &fleetv1alpha1.FederatedWorkload{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	obj := func(lbls map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("apps/v1")
		u.SetKind("Deployment")
		u.SetNamespace("shop")
		u.SetName("web")
		u.SetLabels(lbls)
		return u
	}
	const key, mc = fleetv1alpha1.LabelFederatedWorkload, fleetv1alpha1.LabelMemberCluster
	cases := []struct {
		name   string
		labels map[string]string
		// want is "" for an object of fw's, else the end of the message
		want string
	}{
		{"labelled for this workload", map[string]string{key: "shop.web", "app": "web"}, ""},
		{"no labels at all", nil, "(label fleet.lockstep.dev/federatedworkload=shop.web is missing)"},
		{"other labels only", map[string]string{"app": "web"}, "(label fleet.lockstep.dev/federatedworkload=shop.web is missing)"},
		{"labelled empty", map[string]string{key: ""}, `(label fleet.lockstep.dev/federatedworkload is "", not "shop.web")`},
		{"another workload of the namespace", map[string]string{key: "shop.api"}, `(label fleet.lockstep.dev/federatedworkload is "shop.api", not "shop.web")`},
		{"the same name in another namespace", map[string]string{key: "staging.web"}, `(label fleet.lockstep.dev/federatedworkload is "staging.web", not "shop.web")`},
		{"the value in another case", map[string]string{key: "Shop.Web"}, `(label fleet.lockstep.dev/federatedworkload is "Shop.Web", not "shop.web")`},
		{"labelled for this workload and this cluster", map[string]string{key: "shop.web", mc: "eu-1"}, ""},
		// Two MemberClusters naming one cluster: each holds only its own object.
		{"labelled for this workload in another cluster", map[string]string{key: "shop.web", mc: "eu-2"},
			`(label fleet.lockstep.dev/member-cluster is "eu-2", not "eu-1": another MemberCluster names the same cluster)`},
		{"another workload, labelled for this cluster", map[string]string{key: "shop.api", mc: "eu-1"},
			`(label fleet.lockstep.dev/federatedworkload is "shop.api", not "shop.web")`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := conflictOf("Deployment", obj(c.labels), fw, "eu-1")
			if c.want == "" {
				if got != "" {
					t.Fatalf("an object of the workload's is a conflict: %q", got)
				}
				return
			}
			const start = "Conflict: Deployment shop/web exists in the member and is not managed by this FederatedWorkload "
			if !strings.HasPrefix(got, start) || !strings.HasSuffix(got, c.want) {
				t.Errorf("got %q, want %q followed by %q", got, start, c.want)
			}
		})
	}
}
