//go:build e2e

// Package fleet holds the fleet's decision end-to-end test. It brings up a
// throw-away local fleet (test/e2e/fleetenv: a hub and one member that only
// needs to answer), runs `lockstep hub` built from this checkout as a process
// beside it, and plays decision updates live with a watcher on the
// PlacementDecisions. The hub logs to .dev/lockstep-e2e-fleet/hub.log;
// LOCKSTEP_E2E_KEEP=1 leaves the clusters running.
package fleet

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lockstep-dev/lockstep/test/e2e/fleetenv"
)

var testFleet *fleetenv.Fleet

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	os.Exit(fleetenv.Main(m, "lockstep-e2e-fleet",
		[]string{"MEMBERS=1", "MEMBER_NODES=0", "MEMBER_KWOKCTL_ARGS=--disable kube-scheduler,kwok-controller"},
		func(f *fleetenv.Fleet) { testFleet = f }))
}
