//go:build e2e

// Package fleet holds the fleet's end-to-end test. It brings up a throw-away
// local fleet with hack/dev/fleet-up.sh (a hub and one member, kwok's binary
// runtime, cluster names of its own), runs `lockstep hub` built from this
// checkout as a process beside it, and plays decision updates live with a
// watcher on the PlacementDecisions. The hub logs to .dev/lockstep-e2e-fleet/hub.log;
// LOCKSTEP_E2E_KEEP=1 leaves the clusters running.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
)

// localFleet is the fleet the tests share: where it lives and a client of its hub.
type localFleet struct {
	root, bin, dir, name string
	hubKubeconfig        string
	hub                  client.WithWatch
	process              *hubProcess
}

var testFleet *localFleet

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	// LOCKSTEP_E2E_FLEET names the fleet, so that two runs can share a machine.
	name := "lockstep-e2e-fleet"
	if n := os.Getenv("LOCKSTEP_E2E_FLEET"); n != "" {
		name = n
	}
	ctx := context.Background()
	f, err := newLocalFleet(name)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fleet e2e: %v\n", err)
		return 1
	}
	start := time.Now()
	// Leftovers of an earlier run go first: always begin from nothing.
	if err := f.script(ctx, "fleet-down.sh"); err != nil {
		fmt.Fprintf(os.Stderr, "fleet e2e: %v\n", err)
		return 1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		fmt.Fprintln(os.Stderr, "fleet e2e: interrupted, deleting the fleet")
		if f.process != nil {
			_ = f.process.end(syscall.SIGKILL)
		}
		_ = f.script(context.Background(), "fleet-down.sh")
		os.Exit(1)
	}()
	code := func() int {
		if err := f.up(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "fleet e2e: cannot start the fleet: %v\n", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "fleet e2e: hub and member up in %s\n", time.Since(start).Round(100*time.Millisecond))
		testFleet = f
		code := m.Run()
		if err := f.process.end(syscall.SIGTERM); err != nil {
			fmt.Fprintf(os.Stderr, "fleet e2e: the hub stopped with an error: %v (log %s)\n", err, f.process.logPath)
			code = max(code, 1)
		}
		return code
	}()
	if os.Getenv("LOCKSTEP_E2E_KEEP") == "1" {
		fmt.Fprintf(os.Stderr, "LOCKSTEP_E2E_KEEP=1: leaving fleet %q running; hub KUBECONFIG=%s\n", name, f.hubKubeconfig)
		return code
	}
	if f.process != nil {
		_ = f.process.end(syscall.SIGKILL)
	}
	if err := f.script(ctx, "fleet-down.sh"); err != nil {
		fmt.Fprintf(os.Stderr, "fleet e2e: cannot delete the fleet: %v\n", err)
		code = max(code, 1)
	}
	return code
}

// newLocalFleet checks the binaries (failing, never skipping, when one is
// missing) and places the fleet's state under .dev/<name>.
func newLocalFleet(name string) (*localFleet, error) {
	bin := os.Getenv("LOCKSTEP_BIN")
	if bin == "" {
		return nil, errors.New("LOCKSTEP_BIN is not set: run the e2e tests with 'make test-e2e' (or set it to the absolute bin/ directory)")
	}
	bin, err := filepath.Abs(bin)
	if err != nil {
		return nil, err
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok", "kwokctl"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			return nil, fmt.Errorf("LOCKSTEP_BIN: %w (run 'make tools')", err)
		}
	}
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, ".dev", name)
	return &localFleet{root: root, bin: bin, dir: dir, name: name, hubKubeconfig: filepath.Join(dir, "hub.kubeconfig")}, nil
}

// up starts the hub cluster and one member that only needs to answer (no
// scheduler, no kwok, no nodes), builds the lockstep binary and starts the hub.
func (f *localFleet) up(ctx context.Context) error {
	var build sync.WaitGroup
	var buildErr error
	binary := filepath.Join(f.dir, "lockstep")
	build.Go(func() {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", binary, "./cmd/lockstep")
		cmd.Dir = f.root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building lockstep: %w\n%s", err, out)
		}
	})
	err := f.script(ctx, "fleet-up.sh",
		"MEMBERS=1", "MEMBER_NODES=0", "MEMBER_KWOKCTL_ARGS=--disable kube-scheduler,kwok-controller")
	build.Wait()
	if err != nil {
		return err
	}
	if buildErr != nil {
		return buildErr
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", f.hubKubeconfig)
	if err != nil {
		return fmt.Errorf("load %s: %w", f.hubKubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := fleetv1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	if f.hub, err = client.NewWithWatch(cfg, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	f.process, err = newHubProcess(binary, f.hubKubeconfig, filepath.Join(f.dir, "hub.log"))
	if err != nil {
		return err
	}
	return f.process.start(ctx)
}

// script runs a hack/dev script for this fleet, its progress going to stderr.
func (f *localFleet) script(ctx context.Context, name string, env ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(f.root, "hack", "dev", name))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.Env = append(os.Environ(), "BIN="+f.bin, "FLEET_DIR="+f.dir, "FLEET_NAME="+f.name)
	cmd.Env = append(cmd.Env, env...)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/dev/%s: %w", name, err)
	}
	return nil
}

// memberKwokctl runs kwokctl on the member cluster m1 (stop cluster, start cluster).
func (f *localFleet) memberKwokctl(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(f.root, "hack", "dev", "kwokctl.sh"), args...)
	cmd.Env = append(os.Environ(), "BIN="+f.bin, "DEV="+filepath.Join(f.dir, "m1"), "LOCKSTEP_CLUSTER="+f.name+"-m1")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kwokctl %v: %w\n%s", args, err, out)
	}
	return nil
}

// hubProcess is `lockstep hub` running as a process of its own, so that it
// can be killed (SIGKILL: no cleanup, as a node failure would) and restarted.
type hubProcess struct {
	binary, kubeconfig, logPath, certDir string
	// The ports stay the same across restarts: the webhook configuration a
	// killed run leaves behind keeps pointing at the right one.
	probePort, webhookPort int

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
	runs   int
}

func newHubProcess(binary, kubeconfig, logPath string) (*hubProcess, error) {
	h := &hubProcess{binary: binary, kubeconfig: kubeconfig, logPath: logPath, certDir: filepath.Join(filepath.Dir(logPath), "hub-webhook-certs")}
	var err error
	if h.probePort, err = freePort(); err != nil {
		return nil, err
	}
	if h.webhookPort, err = freePort(); err != nil {
		return nil, err
	}
	if err := os.WriteFile(logPath, nil, 0o644); err != nil {
		return nil, err
	}
	return h, nil
}

// start runs the hub and waits for its readiness probe.
func (h *hubProcess) start(ctx context.Context) error {
	h.mu.Lock()
	if h.cmd != nil {
		h.mu.Unlock()
		return errors.New("the hub is already running")
	}
	log, err := os.OpenFile(h.logPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		h.mu.Unlock()
		return err
	}
	h.runs++
	fmt.Fprintf(log, "=== run %d of the hub, %s\n", h.runs, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(h.binary, "hub",
		"--kubeconfig", h.kubeconfig,
		"--leader-elect=false",
		"--dev-webhooks", "--webhook-cert-dir", h.certDir, "--webhook-port", strconv.Itoa(h.webhookPort),
		"--metrics-bind-address", "0",
		"--health-probe-bind-address", "127.0.0.1:"+strconv.Itoa(h.probePort))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		h.mu.Unlock()
		return fmt.Errorf("starting the hub: %w", err)
	}
	exited := make(chan struct{})
	h.cmd, h.exited = cmd, exited
	go func() {
		err := cmd.Wait()
		_ = log.Close()
		h.mu.Lock()
		h.err = err
		h.mu.Unlock()
		close(exited)
	}()
	h.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	probe := fmt.Sprintf("http://127.0.0.1:%d/readyz", h.probePort)
	last := "not polled yet"
	for {
		select {
		case <-exited:
			return fmt.Errorf("the hub exited while starting; see %s", h.logPath)
		case <-ctx.Done():
			return fmt.Errorf("the hub was not ready within 60s (last: %s); see %s", last, h.logPath)
		case <-time.After(200 * time.Millisecond):
		}
		resp, err := http.Get(probe)
		if err != nil {
			last = err.Error()
			continue
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		last = "readyz " + resp.Status
	}
}

// kill ends the hub with SIGKILL.
func (h *hubProcess) kill() error { return h.end(syscall.SIGKILL) }

// end signals the hub and waits for it to exit. A hub that is not running is
// no error.
func (h *hubProcess) end(sig syscall.Signal) error {
	h.mu.Lock()
	cmd, exited := h.cmd, h.exited
	h.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cmd = nil
	err := h.err
	if sig == syscall.SIGKILL {
		return nil
	}
	return err
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// repoRoot finds the module root from the working directory, which `go test`
// sets to the package directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
