//go:build e2e

// Package fleetrollout rolls FederatedWorkloads out over a real local fleet: a
// hub and two member clusters that run pods (kube-scheduler,
// kube-controller-manager and kwok nodes, as `make dev-up`), with `lockstep
// hub` built from this checkout running beside them (test/e2e/fleetenv). An
// independent watcher (test/fleetwatch) follows every member's pods and checks
// the global budget after every pod event. The hub logs to
// .dev/lockstep-e2e-rollout/hub.log; LOCKSTEP_E2E_KEEP=1 leaves the clusters
// running.
package fleetrollout

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lockstep-dev/lockstep/test/e2e/fleetenv"
)

// readyDelay is how long kwok takes to make a bound pod Ready: short, exact
// (no jitter), so rollouts are quick and their ideal time is known.
const readyDelay = "1s"

var testFleet *fleetenv.Fleet

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	os.Exit(fleetenv.Main(m, "lockstep-e2e-rollout",
		[]string{"MEMBERS=2", "MEMBER_NODES=1", "READY_DELAY=" + readyDelay, "READY_JITTER=0", "DELETE_DELAY=500ms"},
		func(f *fleetenv.Fleet) { testFleet = f }))
}
