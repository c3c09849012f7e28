package integration

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/naming"
	"github.com/lockstep-dev/lockstep/internal/testenv"
)

// peerDNSSet is two replicas of a standalone clique web (2 pods) and a
// scaling group pair of one clique leader, with the given peerDNS each.
func peerDNSSet(ns string, web, leader v1alpha1.PeerDNS) *v1alpha1.PodCliqueSet {
	pcs := &v1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dns"},
		Spec: v1alpha1.PodCliqueSetSpec{
			Replicas: new(int32(2)),
			Template: v1alpha1.PodCliqueSetTemplateSpec{
				Cliques: []v1alpha1.PodCliqueTemplateSpec{
					{Name: "web", Replicas: 2, PeerDNS: web, Template: podTemplate("web:v1")},
					{Name: "leader", Replicas: 1, PeerDNS: leader, Template: podTemplate("engine:v1")},
				},
				PodCliqueScalingGroups: []v1alpha1.PodCliqueScalingGroupConfig{{Name: "pair", CliqueNames: []string{"leader"}}},
			},
		},
	}
	return pcs
}

// dnsOf says, for every live pod of the namespace, its clique and subdomain,
// and whether its hostname is its index's; and the Services there.
func dnsOf(t *testing.T, ns string) (pods map[string][]string, services string, hostnamesOK bool) {
	t.Helper()
	var list corev1.PodList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	pods, hostnamesOK = map[string][]string{}, true
	for i := range list.Items {
		p := &list.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		idx, _ := strconv.Atoi(p.Labels[v1alpha1.LabelPodIndex])
		hostnamesOK = hostnamesOK && p.Spec.Hostname == naming.Pod(p.Labels[v1alpha1.LabelPodClique], idx)
		clique := p.Labels[v1alpha1.LabelClique]
		pods[clique] = append(pods[clique], p.Spec.Subdomain)
	}
	return pods, strings.Join(listNames(t, ns, &corev1.ServiceList{}), ","), hostnamesOK
}

// settledDNS waits for the rollout to be done with every live web pod under
// subdomain web and every leader under leader ("" for none), and the Services
// listed.
func settledDNS(t *testing.T, pcs *v1alpha1.PodCliqueSet, what string, web, leader func(replica string) string, services string) {
	t.Helper()
	want := func(f func(string) string, n int) string {
		var out []string
		for _, r := range []string{"0", "1"} {
			for range n {
				out = append(out, f(r))
			}
		}
		return fmt.Sprint(out)
	}
	waitFor(t, what, 90*time.Second, func() (bool, string) {
		_ = env.Client.Get(context.Background(), client.ObjectKeyFromObject(pcs), pcs)
		pods, svcs, hostnamesOK := dnsOf(t, pcs.Namespace)
		sortedSubdomains := func(clique string) string {
			s := pods[clique]
			slices.Sort(s)
			return fmt.Sprint(s)
		}
		done := pcs.Status.ObservedGeneration == pcs.Generation && pcs.Status.UpdatedReplicas == 2 && pcs.Status.AvailableReplicas == 2
		ok := done && hostnamesOK && sortedSubdomains("web") == want(web, 2) && sortedSubdomains("leader") == want(leader, 1) && svcs == services
		return ok, fmt.Sprintf("updated %d available %d; web pods' subdomains %s, leaders' %s; hostnames as their indices: %v; Services %q",
			pcs.Status.UpdatedReplicas, pcs.Status.AvailableReplicas, sortedSubdomains("web"), sortedSubdomains("leader"), hostnamesOK, svcs)
	})
}

// A clique with peerDNS None gets no subdomain, and a replica whose cliques
// all say None gets no headless Service (no endpoints for the cluster to keep);
// turning it on or off replaces the clique's pods, standalone or in a group,
// and the Services follow.
func TestPodCliqueSet_PeerDNSNoneNamesNoPodAndMakesNoService(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ns := newNamespace(t)
	testenv.StartKubelet(ctx, env.Client, ns)
	pcs := peerDNSSet(ns, v1alpha1.PeerDNSNone, v1alpha1.PeerDNSReplica)
	if err := env.Client.Create(ctx, pcs); err != nil {
		t.Fatal(err)
	}
	named := func(r string) string { return "dns-" + r }
	unnamed := func(string) string { return "" }
	settledDNS(t, pcs, "web unnamed, the leaders named, a Service per replica", unnamed, named, "dns-0,dns-1")

	updatePCS(t, pcs, func(s *v1alpha1.PodCliqueSetSpec) { s.Template.Clique("leader").PeerDNS = v1alpha1.PeerDNSNone })
	settledDNS(t, pcs, "the leaders replaced without a name, and no Service left", unnamed, unnamed, "")

	updatePCS(t, pcs, func(s *v1alpha1.PodCliqueSetSpec) { s.Template.Clique("web").PeerDNS = v1alpha1.PeerDNSReplica })
	settledDNS(t, pcs, "web replaced with names, a Service per replica again", named, unnamed, "dns-0,dns-1")
}
