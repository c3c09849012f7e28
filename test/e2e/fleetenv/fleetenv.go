//go:build e2e

// Package fleetenv is the local fleet the fleet end-to-end tests run on: a
// throw-away hub and members made by hack/dev/fleet-up.sh (kwok's binary
// runtime, cluster names of their own), and `lockstep hub` built from this
// checkout running as a process beside them, so that a test can SIGKILL it and
// start it again. Main runs a test package on one such fleet and deletes it
// afterwards (LOCKSTEP_E2E_KEEP=1 leaves it running).
package fleetenv

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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	lockstepv1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/test/e2e/cluster"
)

// Fleet is a local fleet: where it lives, a client of its hub and the hub process.
type Fleet struct {
	Root, Bin, Dir, Name string
	HubKubeconfig        string
	Hub                  client.WithWatch
	Process              *Process
}

// Main brings up the fleet named LOCKSTEP_E2E_FLEET (defaultName when unset)
// with fleet-up.sh and the given settings, runs the tests, and deletes the
// fleet. ready receives the fleet before the tests run. It returns the exit
// code for os.Exit.
func Main(m *testing.M, defaultName string, upEnv []string, ready func(*Fleet)) int {
	name := defaultName
	if n := os.Getenv("LOCKSTEP_E2E_FLEET"); n != "" {
		name = n
	}
	ctx := context.Background()
	f, err := New(name)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fleet e2e: %v\n", err)
		return 1
	}
	start := time.Now()
	// Leftovers of an earlier run go first: always begin from nothing.
	if err := f.Script(ctx, "fleet-down.sh"); err != nil {
		fmt.Fprintf(os.Stderr, "fleet e2e: %v\n", err)
		return 1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		fmt.Fprintln(os.Stderr, "fleet e2e: interrupted, deleting the fleet")
		if f.Process != nil {
			_ = f.Process.End(syscall.SIGKILL)
		}
		_ = f.Script(context.Background(), "fleet-down.sh")
		os.Exit(1)
	}()
	code := func() int {
		if err := f.Up(ctx, upEnv...); err != nil {
			fmt.Fprintf(os.Stderr, "fleet e2e: cannot start the fleet: %v\n", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "fleet e2e: fleet %s up in %s\n", name, time.Since(start).Round(100*time.Millisecond))
		ready(f)
		code := m.Run()
		if err := f.Process.End(syscall.SIGTERM); err != nil {
			fmt.Fprintf(os.Stderr, "fleet e2e: the hub stopped with an error: %v (log %s)\n", err, f.Process.LogPath)
			code = max(code, 1)
		}
		return code
	}()
	if os.Getenv("LOCKSTEP_E2E_KEEP") == "1" {
		fmt.Fprintf(os.Stderr, "LOCKSTEP_E2E_KEEP=1: leaving fleet %q running; hub KUBECONFIG=%s\n", name, f.HubKubeconfig)
		return code
	}
	if f.Process != nil {
		_ = f.Process.End(syscall.SIGKILL)
	}
	if err := f.Script(ctx, "fleet-down.sh"); err != nil {
		fmt.Fprintf(os.Stderr, "fleet e2e: cannot delete the fleet: %v\n", err)
		code = max(code, 1)
	}
	return code
}

// New checks the binaries (failing, never skipping, when one is missing) and
// places the fleet's state under .dev/<name>.
func New(name string) (*Fleet, error) {
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
	root, err := cluster.RepoRoot()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, ".dev", name)
	return &Fleet{Root: root, Bin: bin, Dir: dir, Name: name, HubKubeconfig: filepath.Join(dir, "hub.kubeconfig")}, nil
}

// Scheme knows the built-in kinds, the fleet kinds and Lockstep's own.
func Scheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, fleetv1alpha1.AddToScheme, lockstepv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return scheme, nil
}

// Up runs fleet-up.sh with env (MEMBERS=..., MEMBER_NODES=...), builds the
// lockstep binary meanwhile, and starts the hub.
func (f *Fleet) Up(ctx context.Context, env ...string) error {
	var build sync.WaitGroup
	var buildErr error
	binary := filepath.Join(f.Dir, "lockstep")
	build.Go(func() {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", binary, "./cmd/lockstep")
		cmd.Dir = f.Root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building lockstep: %w\n%s", err, out)
		}
	})
	err := f.Script(ctx, "fleet-up.sh", env...)
	build.Wait()
	if err != nil {
		return err
	}
	if buildErr != nil {
		return buildErr
	}
	if f.Hub, err = f.Client(f.HubKubeconfig); err != nil {
		return err
	}
	f.Process, err = newProcess("hub", binary, f.HubKubeconfig, filepath.Join(f.Dir, "hub.log"))
	if err != nil {
		return err
	}
	return f.Process.Start(ctx)
}

// Operator prepares `lockstep operator` for member short (not started): the
// members that run PodCliqueSets need one each. It logs to
// <dir>/<short>-operator.log.
func (f *Fleet) Operator(short string) (*Process, error) {
	return newProcess("operator", filepath.Join(f.Dir, "lockstep"), f.MemberKubeconfig(short), filepath.Join(f.Dir, short+"-operator.log"))
}

// DefaultClusterSet is the MemberClusterSet fleet-up.sh creates: every
// member. It is bound to the namespaces default and lockstep-fleet.
const DefaultClusterSet = "default"

// Namespace creates namespace name on the hub (if missing) and binds
// DefaultClusterSet to it, so that its Placements may select every member.
func (f *Fleet) Namespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := f.Hub.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return Bind(ctx, f.Hub, name, DefaultClusterSet)
}

// Bind binds MemberClusterSet set to namespace (if not bound yet).
func Bind(ctx context.Context, hub client.Client, namespace, set string) error {
	b := &fleetv1alpha1.MemberClusterSetBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: set},
		Spec:       fleetv1alpha1.MemberClusterSetBindingSpec{ClusterSet: set},
	}
	if err := hub.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("binding MemberClusterSet %s to namespace %s: %w", set, namespace, err)
	}
	return nil
}

// Config is the rest config of a kubeconfig file, with room for a busy test.
func Config(kubeconfig string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	return cfg, nil
}

// Client is a client of the cluster of a kubeconfig file.
func (f *Fleet) Client(kubeconfig string) (client.WithWatch, error) {
	cfg, err := Config(kubeconfig)
	if err != nil {
		return nil, err
	}
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	return client.NewWithWatch(cfg, client.Options{Scheme: scheme})
}

// MemberKubeconfig is the kubeconfig file of member short ("m1", "m2", ...).
func (f *Fleet) MemberKubeconfig(short string) string {
	return filepath.Join(f.Dir, short+".kubeconfig")
}

// Script runs a hack/dev script for this fleet, its progress going to stderr.
func (f *Fleet) Script(ctx context.Context, name string, env ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(f.Root, "hack", "dev", name))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.Env = append(os.Environ(), "BIN="+f.Bin, "FLEET_DIR="+f.Dir, "FLEET_NAME="+f.Name)
	cmd.Env = append(cmd.Env, env...)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/dev/%s: %w", name, err)
	}
	return nil
}

// MemberKwokctl runs kwokctl on member short (stop cluster, start cluster).
func (f *Fleet) MemberKwokctl(ctx context.Context, short string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(f.Root, "hack", "dev", "kwokctl.sh"), args...)
	cmd.Env = append(os.Environ(), "BIN="+f.Bin, "DEV="+filepath.Join(f.Dir, short), "LOCKSTEP_CLUSTER="+f.Name+"-"+short)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kwokctl %v on %s: %w\n%s", args, short, err, out)
	}
	return nil
}

// Process is `lockstep hub` or `lockstep operator` running as a process of
// its own, so that it can be killed (SIGKILL: no cleanup, as a node failure
// would) and restarted. It serves its webhooks from this host (--dev-webhooks).
type Process struct {
	verb, binary, kubeconfig, certDir string
	LogPath                           string
	// The ports stay the same across restarts: the webhook configuration a
	// killed run leaves behind keeps pointing at the right one.
	probePort, webhookPort, metricsPort int

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
	runs   int
}

// MetricsURL is where the process serves its Prometheus metrics.
func (h *Process) MetricsURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", h.metricsPort)
}

// newProcess prepares `lockstep <verb>` logging to logPath.
func newProcess(verb, binary, kubeconfig, logPath string) (*Process, error) {
	h := &Process{verb: verb, binary: binary, kubeconfig: kubeconfig, LogPath: logPath,
		certDir: strings.TrimSuffix(logPath, ".log") + "-webhook-certs"}
	var err error
	if h.probePort, err = freePort(); err != nil {
		return nil, err
	}
	if h.webhookPort, err = freePort(); err != nil {
		return nil, err
	}
	if h.metricsPort, err = freePort(); err != nil {
		return nil, err
	}
	if err := os.WriteFile(logPath, nil, 0o644); err != nil {
		return nil, err
	}
	return h, nil
}

// Start runs the hub and waits for its readiness probe.
func (h *Process) Start(ctx context.Context) error {
	h.mu.Lock()
	if h.cmd != nil {
		h.mu.Unlock()
		return fmt.Errorf("the %s is already running", h.verb)
	}
	log, err := os.OpenFile(h.LogPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		h.mu.Unlock()
		return err
	}
	h.runs++
	fmt.Fprintf(log, "=== run %d of the %s, %s\n", h.runs, h.verb, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(h.binary, h.verb,
		"--kubeconfig", h.kubeconfig,
		"--leader-elect=false", "--log-level", "debug",
		"--dev-webhooks", "--webhook-cert-dir", h.certDir, "--webhook-port", strconv.Itoa(h.webhookPort),
		"--metrics-bind-address", "127.0.0.1:"+strconv.Itoa(h.metricsPort),
		"--health-probe-bind-address", "127.0.0.1:"+strconv.Itoa(h.probePort))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		h.mu.Unlock()
		return fmt.Errorf("starting the %s: %w", h.verb, err)
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
			return fmt.Errorf("the %s exited while starting; see %s", h.verb, h.LogPath)
		case <-ctx.Done():
			return fmt.Errorf("the %s was not ready within 60s (last: %s); see %s", h.verb, last, h.LogPath)
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

// Kill ends the process with SIGKILL.
func (h *Process) Kill() error { return h.End(syscall.SIGKILL) }

// End signals the process and waits for it to exit. One that is not running
// is no error.
func (h *Process) End(sig syscall.Signal) error {
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
