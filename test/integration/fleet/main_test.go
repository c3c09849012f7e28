// Package fleet tests the hub against real apiservers: a hub with the fleet
// CRDs and webhooks, and two member clusters the hub probes and writes to.
package fleet

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/testenv"
)

// memberEnv is the member most tests use; member2Env a second one for the
// FederatedWorkload tests, which split workloads over two members.
var hubEnv, memberEnv, member2Env *testenv.Cluster

func TestMain(m *testing.M) {
	level := zapcore.ErrorLevel
	if os.Getenv("LOCKSTEP_TEST_LOG") == "debug" {
		level = zapcore.DebugLevel
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(level)))
	os.Exit(run(m))
}

// prom is a real Prometheus scraping exporter: stage gates' analyses query it.
var (
	prom     *testenv.Prometheus
	exporter testenv.Exporter
)

func run(m *testing.M) int {
	target := httptest.NewServer(&exporter)
	defer target.Close()
	var err error
	if prom, err = testenv.StartPrometheus(strings.TrimPrefix(target.URL, "http://")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = prom.Stop() }()
	if hubEnv, err = testenv.StartHub(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop("hub", hubEnv)
	if memberEnv, err = testenv.StartMember(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop("member", memberEnv)
	if member2Env, err = testenv.StartMember(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop("second member", member2Env)
	return m.Run()
}

func stop(name string, c *testenv.Cluster) {
	if err := c.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping the %s: %v\n", name, err)
	}
}

// newNamespace creates a namespace on the hub for one test, with the set of
// every member (testenv.DefaultClusterSet) bound to it, as `make fleet-up`
// does for its namespaces.
func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := newUnboundNamespace(t, prefix)
	if err := testenv.BindDefaultClusterSet(context.Background(), hubEnv.Client, ns); err != nil {
		t.Fatal(err)
	}
	return ns
}

// newOwnNamespace creates a namespace on the hub for one test, bound to a
// cluster set of its own: the MemberClusters labelled fw-test=<namespace>.
// Clusters other tests leave behind are then none of its workloads' concern.
func newOwnNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ctx := context.Background()
	ns := newUnboundNamespace(t, prefix)
	if err := testenv.EnsureClusterSet(ctx, hubEnv.Client, ns, &metav1.LabelSelector{MatchLabels: map[string]string{"fw-test": ns}}); err != nil {
		t.Fatal(err)
	}
	if err := testenv.BindClusterSet(ctx, hubEnv.Client, ns, ns); err != nil {
		t.Fatal(err)
	}
	return ns
}

// newUnboundNamespace creates a namespace on the hub for one test, with no
// cluster set bound: its Placements select nothing.
func newUnboundNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := hubEnv.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return ns.Name
}

// eventually polls cond until it holds, failing the test with cond's last
// account after timeout.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	testenv.Eventually(t, what, timeout, cond)
}

// runManager starts a manager on the hub with what setup registers, and stops
// it when the test ends. The returned function stops it earlier and waits.
func runManager(t *testing.T, setup func(ctrl.Manager) error) (stop func()) {
	t.Helper()
	return runManagerWith(t, hubEnv.ManagerOptions(), setup)
}

// runScopedHub is runManager for a hub that sees only one test's objects: the
// namespaced ones in ns (and the kubeconfig Secrets of the fleet namespace),
// and the MemberClusters labelled hubScope=ns. Objects earlier tests left on
// the shared hub apiserver (envtest runs no namespace controller to delete
// them) are then neither reconciled nor probed by it.
// hubScope labels the MemberClusters of one scoped hub; tests relabel their
// other labels to move a cluster in or out of a placement.
const hubScope = "lockstep-test-hub"

func runScopedHub(t *testing.T, ns string, setup func(ctrl.Manager) error) (stop func()) {
	t.Helper()
	o := hubEnv.ManagerOptions()
	o.Cache.DefaultNamespaces = map[string]cache.Config{ns: {}, testenv.FleetNamespace: {}}
	o.Cache.ByObject = map[client.Object]cache.ByObject{
		&fleetv1alpha1.MemberCluster{}: {Label: labels.SelectorFromSet(labels.Set{hubScope: ns})},
	}
	return runManagerWith(t, o, setup)
}

func runManagerWith(t *testing.T, o ctrl.Options, setup func(ctrl.Manager) error) (stop func()) {
	t.Helper()
	mgr, err := ctrl.NewManager(hubEnv.Config, o)
	if err != nil {
		t.Fatalf("creating manager: %v", err)
	}
	if err := setup(mgr); err != nil {
		t.Fatalf("setting up manager: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v\n%s", err, stuckGoroutines())
		}
	}
	t.Cleanup(stop)
	return stop
}

// stuckGoroutines are the stacks of the goroutines in the hub's code,
// controller-runtime's or client-go's informers and queues, for a manager
// that did not stop in time: what it waits for.
func stuckGoroutines() string {
	var all strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&all, 2)
	var out []string
	for _, g := range strings.Split(all.String(), "\n\n") {
		for _, pkg := range []string{"lockstep/internal/", "controller-runtime", "client-go/tools/cache", "client-go/util/workqueue"} {
			if strings.Contains(g, pkg) {
				out = append(out, g)
				break
			}
		}
	}
	return strings.Join(out, "\n\n")
}
