package fleet

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/lockstep-dev/lockstep/internal/hub/federatedworkload"
	"github.com/lockstep-dev/lockstep/internal/hub/membercluster"
	"github.com/lockstep-dev/lockstep/internal/hub/members"
	"github.com/lockstep-dev/lockstep/internal/testenv"
)

// The hub at scale: rounds fan their member calls out, and member objects
// are watched, not only polled.

// startWatchingHub restarts the fleet's hub as `lockstep hub` runs it: the
// members registry feeds the FederatedWorkload controller the changes of the
// member objects (federatedworkload.MemberEvents), with poll its RolloutPoll
// and resync its Resync (an hour makes them too slow to matter), and now its
// clock (nil: time.Now), which runs once a round.
func (f *fedFleet) startWatchingHub(poll, resync time.Duration, now func() time.Time) {
	f.t.Helper()
	if f.stopHub != nil {
		f.stopHub()
	}
	reg := members.NewRegistry(memberEnv.Scheme, ctrl.Log.WithName("members"))
	events := federatedworkload.NewMemberEvents()
	reg.AddWatcher(events)
	f.stopHub = runScopedHub(f.t, f.ns, func(mgr ctrl.Manager) error {
		if err := (&membercluster.Reconciler{
			Client: mgr.GetClient(), Members: reg, Recorder: mgr.GetEventRecorder("test-membercluster"),
			ProbeInterval: testProbes.ProbeInterval, ProbeTimeout: testProbes.ProbeTimeout, FleetNamespace: testenv.FleetNamespace,
		}).SetupWithManager(mgr); err != nil {
			return err
		}
		return (&federatedworkload.Reconciler{
			Client: mgr.GetClient(), Members: reg, Recorder: mgr.GetEventRecorder("test-federatedworkload"),
			RolloutPoll: poll, Resync: resync, Now: now, MemberEvents: events,
		}).SetupWithManager(mgr)
	})
	for _, c := range f.clusters {
		waitForReady(f.t, c, "True", "Reachable", 20*time.Second)
	}
}

// A member status change runs the workload's next round at once: with the
// hub's poll and resync an hour long, a whole rollout still goes through, each
// step started by the member's Deployment (and ReplicaSets) reporting progress.
// Without the watch the first step never comes (the test times out).
func TestFederatedWorkload_MemberStatusChangeRunsTheNextRound(t *testing.T) {
	f := newFedFleet(t, "fw-watch", false)
	f.startWatchingHub(time.Hour, time.Hour, nil)
	f.createSettledWorkload(10, intstr.FromInt32(2), intstr.FromInt32(1))
	f.startRollout()
	f.rollout(nil)
}

// A rollout whose member objects are all watched is not polled: while it
// waits on members that report nothing, no round runs, though the hub's
// rollout poll is 100 ms. Without the watch's say (Input.Watched) it would
// run about 30 rounds in the 3 s looked at.
func TestFederatedWorkload_AWatchedRolloutIsNotPolled(t *testing.T) {
	f := newFedFleet(t, "fw-nopoll", false)
	var rounds atomic.Int64
	f.startWatchingHub(100*time.Millisecond, time.Hour, func() time.Time { rounds.Add(1); return time.Now() })
	f.createSettledWorkload(10, intstr.FromInt32(2), intstr.FromInt32(1))
	f.startRollout()
	// The hub plans the new template; the members, whose controllers the
	// test plays, do not answer it.
	eventually(t, fwStepTimeout, "a round of the new template", func() (bool, string) {
		fw := f.workload()
		return fw.Status.ObservedGeneration == fw.Generation, fmt.Sprintf("observed %d of %d", fw.Status.ObservedGeneration, fw.Generation)
	})
	// Rounds on the echoes of the hub's own member writes may follow; after
	// those none.
	before := rounds.Load()
	window := 3 * time.Second
	end := time.Now().Add(window)
	for time.Now().Before(end) {
		if n := rounds.Load() - before; n > 5 {
			t.Fatalf("%d rounds within %s of a rollout waiting on watched members: polled", n, window)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%d rounds in %s", rounds.Load()-before, window)
}

// holdingProxy forwards plain HTTP to an apiserver and holds every write
// (anything but GET) until the client gives up: a member whose reads answer
// and whose writes hang.
type holdingProxy struct {
	addr string
	// held counts the writes being held; gaveUp the ones whose client timed
	// out.
	held, gaveUp atomic.Int32
}

func newHoldingProxy(t *testing.T, env *testenv.Cluster) *holdingProxy {
	t.Helper()
	target, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = transport
	p := &holdingProxy{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			rp.ServeHTTP(w, r)
			return
		}
		// Read the request through, so the server notices the client going.
		_, _ = io.Copy(io.Discard, r.Body)
		p.held.Add(1)
		<-r.Context().Done()
		p.held.Add(-1)
		p.gaveUp.Add(1)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return p
}

// substitute is the registry with one member's connection replaced.
type substitute struct {
	members.Clusters
	name string
	conn cluster.Cluster
}

func (s substitute) Get(name string, kind schema.GroupVersionKind) (cluster.Cluster, bool) {
	if name == s.name {
		return s.conn, true
	}
	return s.Clusters.Get(name, kind)
}

// A member whose writes hang costs its own write a timeout and holds back no
// other member's write: the round writes its members at once. Cluster a
// (first in name order, so the first write a one-at-a-time round makes) is
// reached through a proxy that holds every write; b's Deployment must appear
// while a's first write is still held, before any write to a timed out.
func TestFederatedWorkload_HangingMemberDoesNotDelayAnotherMembersWrite(t *testing.T) {
	f := newFedFleet(t, "fw-fanout", false)
	a, b := f.clusters[0], f.clusters[1]
	p := newHoldingProxy(t, memberEnv)
	conn, err := cluster.New(&rest.Config{Host: "http://" + p.addr}, func(o *cluster.Options) { o.Scheme = memberEnv.Scheme })
	if err != nil {
		t.Fatal(err)
	}
	f.wrapMembers = func(reg members.Clusters) members.Clusters { return substitute{Clusters: reg, name: a, conn: conn} }
	f.stopHub()
	f.startHub()
	for _, c := range f.clusters {
		waitForReady(t, c, "True", "Reachable", 20*time.Second)
	}
	f.createWorkload(10, intstr.FromInt32(2), intstr.FromInt32(1), nil)
	eventually(t, fwStepTimeout, "the Deployment in "+b, func() (bool, string) {
		return f.deployment(b) != nil, ""
	})
	if n := p.gaveUp.Load(); n > 0 {
		t.Fatalf("%s's Deployment was written only after %d write(s) to %s timed out: the hanging member held the round's other writes", b, n, a)
	}
	eventually(t, fwStepTimeout, "a write to "+a+" held", func() (bool, string) {
		return p.held.Load()+p.gaveUp.Load() > 0, ""
	})
	if f.deployment(a) != nil {
		t.Fatalf("%s got its Deployment through a proxy that holds writes", a)
	}
}
