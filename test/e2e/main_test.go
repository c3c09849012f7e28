//go:build e2e

// Package e2e holds the end-to-end tests. They run against a throw-away local
// cluster (hack/dev, kwok's binary runtime) with a real kube-scheduler doing
// native gang scheduling over simulated GPU nodes, and the Lockstep operator
// built from this checkout running beside them with its webhooks. Run them
// with `make test-e2e`; set LOCKSTEP_E2E_KEEP=1 to keep the cluster for
// inspection. The operator logs to .dev/e2e/operator.log.
package e2e

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lockstep-dev/lockstep/internal/testenv"
	"github.com/lockstep-dev/lockstep/test/e2e/cluster"
)

// The cluster every test in this package shares. Tests make their own
// namespaces; tests that depend on the node count set it first.
var testCluster *cluster.Cluster

// The operator every test shares; restart tests kill and restart it.
var testOperator *operator

// controlPlane records the components the supervisor started again.
var controlPlane restarts

// restarts is the list of control-plane restarts so far.
type restarts struct {
	mu   sync.Mutex
	list []cluster.Restart
}

func (r *restarts) record(x cluster.Restart) {
	if x.Err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %s (pid %d) had exited; starting it again failed: %v\n", x.Component, x.PID, x.Err)
	} else {
		fmt.Fprintf(os.Stderr, "e2e: %s (pid %d) had exited; started again\n", x.Component, x.PID)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, x)
}

// since returns the restarts from the n-th on, and how many there are.
func (r *restarts) since(n int) ([]cluster.Restart, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.list[min(n, len(r.list)):]), len(r.list)
}

// Settings of the e2e cluster that tests rely on.
const (
	e2eGPUsPerNode = 8
	e2eReadyDelay  = 2 * time.Second
	e2eReadyJitter = 1 * time.Second
)

func TestMain(m *testing.M) {
	// The tests' own clients log only the apiserver's warnings, which the
	// tests check where they matter.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	// LOCKSTEP_E2E_CLUSTER lets two runs share a machine, each with its own cluster.
	name, devDir := "lockstep-e2e", ".dev/e2e"
	if n := os.Getenv("LOCKSTEP_E2E_CLUSTER"); n != "" {
		name, devDir = n, ".dev/"+n
	}
	ctx := context.Background()
	start := time.Now()
	c, err := cluster.Start(ctx, cluster.Options{
		Name:        name,
		DevDir:      devDir,
		Nodes:       1,
		GPUsPerNode: e2eGPUsPerNode,
		ReadyDelay:  e2eReadyDelay,
		ReadyJitter: e2eReadyJitter,
	})
	if err != nil {
		// Failing (never skipping) is deliberate: CI must not go green by
		// running nothing.
		fmt.Fprintf(os.Stderr, "e2e: cannot start the test cluster: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: cluster %q up in %s\n", c.Name, time.Since(start).Round(100*time.Millisecond))
	testCluster = c

	// A real Prometheus answers gates' analyses: it scrapes the operator and
	// the tests' exporter, and the operator may query it.
	promPort, err := testenv.FreePort()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		_ = c.Stop(ctx)
		return 1
	}
	analysisProm = fmt.Sprintf("http://127.0.0.1:%d", promPort)
	op, err := startOperator(ctx, c)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: cannot start the operator: %v\n", err)
		_ = c.Stop(ctx)
		return 1
	}
	testOperator = op
	fmt.Fprintf(os.Stderr, "e2e: operator running, log %s\n", op.LogPath)
	target := httptest.NewServer(&exporter)
	defer target.Close()
	if testProm, err = testenv.StartPrometheusOn(promPort, strings.TrimPrefix(target.URL, "http://"), fmt.Sprintf("127.0.0.1:%d", op.metricsPort)); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: cannot start Prometheus: %v\n", err)
		_ = op.stop()
		_ = c.Stop(ctx)
		return 1
	}
	defer func() { _ = testProm.Stop() }()
	took, err := awaitGarbageCollector(ctx, c.Client)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		_ = op.stop()
		_ = c.Stop(ctx)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: the garbage collector handles Lockstep's kinds (%s)\n", took.Round(100*time.Millisecond))

	// A control-plane component that exits on its own is started again, as
	// on a real node; the chaos suite's faults make the scheduler do so.
	superviseCtx, stopSupervising := context.WithCancel(ctx)
	supervised := make(chan struct{})
	go func() {
		defer close(supervised)
		c.Supervise(superviseCtx, time.Second, controlPlane.record)
	}()

	// kwokctl's processes outlive this one; on Ctrl-C or SIGTERM take them down
	// instead of leaving them behind.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		fmt.Fprintln(os.Stderr, "e2e: interrupted, stopping the test cluster")
		stopSupervising()
		<-supervised
		_ = c.Stop(context.Background())
		os.Exit(1)
	}()

	code := m.Run()
	stopSupervising()
	<-supervised
	if err := op.stop(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: the operator stopped with an error: %v\n", err)
		code = max(code, 1)
	}
	fmt.Fprintf(os.Stderr, "e2e: operator: %s\n", op.summary())
	if code != 0 {
		// Deleting the cluster deletes its logs; a failure needs them (which
		// component deleted a pod, when the scheduler came back).
		dst := filepath.Join(c.DevDir, "failed-run-logs")
		if err := c.SaveLogs(dst); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: cannot keep the control plane's logs: %v\n", err)
		} else {
			fmt.Fprintf(os.Stderr, "e2e: the control plane's logs are in %s\n", dst)
		}
	}
	if err := c.Stop(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: cannot stop the test cluster: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
