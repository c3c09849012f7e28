// Package testenv starts a real kube-apiserver and etcd (envtest) with Lockstep's
// CRDs and admission webhooks installed, for integration tests. The binaries are
// the ones `make tools` builds into bin/; a missing binary fails the test run.
package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controlloop/workqueue"
	"github.com/lockstep-dev/lockstep/internal/observe/pods"
	lockstepwebhook "github.com/lockstep-dev/lockstep/internal/webhook"
)

// Env is a running control plane with Lockstep's API.
type Env struct {
	Config *rest.Config
	Client client.Client
	Scheme *runtime.Scheme
	// Cache is the manager's cache (nil without a manager): what the
	// controllers see.
	Cache client.Reader

	env    *envtest.Environment
	cancel context.CancelFunc
	done   chan error
	gc     *exec.Cmd
}

// Options choose what runs besides the apiserver.
type Options struct {
	// Webhooks serves Lockstep's admission webhooks from this process.
	Webhooks bool
	// Setup registers controllers with the manager the environment runs.
	Setup func(ctrl.Manager) error
	// PodGroupProtection runs kube-controller-manager's PodGroup protection,
	// which removes a PodGroup's finalizer once no pod uses it. Controllers that
	// delete in the foreground through gangs need it; tests of the gang backend
	// itself leave it off and play its part by hand, step by step.
	PodGroupProtection bool
}

// RepoRoot is the root of this repository, found from this source file.
func RepoRoot() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Start boots the control plane. Call Stop when done.
func Start(o Options) (*Env, error) {
	root := RepoRoot()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		Scheme:                   scheme,
		CRDDirectoryPaths:        []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	// Serve the alpha gang-scheduling API (Workload, PodGroup) as the local
	// cluster does, so the native gang backend can be tested here.
	api := env.ControlPlane.GetAPIServer().Configure()
	api.Append("feature-gates", featureGates)
	api.Append("runtime-config", "scheduling.k8s.io/v1alpha2=true")
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		env.BinaryAssetsDirectory = filepath.Join(root, "bin")
	}
	if o.Webhooks {
		env.WebhookInstallOptions = envtest.WebhookInstallOptions{Paths: []string{filepath.Join(root, "config", "webhook")}}
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting envtest (run `make tools` to build bin/kube-apiserver and bin/etcd): %w", err)
	}
	e := &Env{Config: cfg, Scheme: scheme, env: env}
	if err := e.startGarbageCollector(root, o.PodGroupProtection); err != nil {
		_ = env.Stop()
		return nil, err
	}
	if e.Client, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		_ = env.Stop()
		return nil, err
	}
	if o.Webhooks || o.Setup != nil {
		if err := e.runManager(o); err != nil {
			_ = env.Stop()
			return nil, err
		}
	}
	return e, nil
}

// runManager runs a manager with the webhooks and the controllers asked for.
func (e *Env) runManager(o Options) error {
	wo := &e.env.WebhookInstallOptions
	opts := ctrl.Options{
		Scheme: e.Scheme,
		// The operator's own pod cache: only the pods Lockstep made.
		Cache:                  cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: pods.Cache()}},
		Controller:             workqueue.Controller(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	}
	if o.Webhooks {
		opts.WebhookServer = webhook.NewServer(webhook.Options{
			Host: wo.LocalServingHost, Port: wo.LocalServingPort, CertDir: wo.LocalServingCertDir,
		})
	}
	mgr, err := ctrl.NewManager(e.Config, opts)
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	e.Cache = mgr.GetCache()
	if o.Webhooks {
		if err := lockstepwebhook.Setup(mgr); err != nil {
			return err
		}
	}
	if o.Setup != nil {
		if err := o.Setup(mgr); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan error, 1)
	go func() { e.done <- mgr.Start(ctx) }()
	if !o.Webhooks {
		return nil
	}
	// Wait until the apiserver can reach the webhook server.
	deadline := time.Now().Add(time.Minute)
	for {
		if err := mgr.GetWebhookServer().StartedChecker()(nil); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("webhook server did not start within a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// featureGates turn on Workload/PodGroup (scheduling.k8s.io/v1alpha2).
const featureGates = "GenericWorkload=true,GangScheduling=true"

// startGarbageCollector runs kube-controller-manager's garbage collector (and
// PodGroup protection when asked; nothing else) against the apiserver: Lockstep relies on
// owner references to remove a deleted object's pods, and envtest has no
// controller manager.
func (e *Env) startGarbageCollector(root string, podGroupProtection bool) error {
	user, err := e.env.AddUser(envtest.User{Name: "gc", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("adding a user for the garbage collector: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "lockstep-gc-")
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		return err
	}
	bin := filepath.Join(root, "bin", "kube-controller-manager")
	if assets := os.Getenv("KUBEBUILDER_ASSETS"); assets != "" {
		bin = filepath.Join(assets, "kube-controller-manager")
	}
	controllers := "garbagecollector"
	if podGroupProtection {
		controllers += ",podgroup-protection-controller"
	}
	e.gc = exec.Command(bin, "--kubeconfig="+path, "--controllers="+controllers,
		"--feature-gates="+featureGates, "--leader-elect=false",
		"--secure-port=0", "--concurrent-gc-syncs=5", "--v=0")
	if out := os.Getenv("LOCKSTEP_TEST_GC_LOG"); out != "" {
		e.gc.Stdout, e.gc.Stderr = os.Stderr, os.Stderr
	}
	if err := e.gc.Start(); err != nil {
		return fmt.Errorf("starting the garbage collector (%s; run `make tools`): %w", bin, err)
	}
	return nil
}

// PauseGarbageCollector stops the garbage collector's process (SIGSTOP) until
// the returned resume is called (it may be called more than once): a test
// tells what the operator deletes itself from what the collector deletes for
// it.
func (e *Env) PauseGarbageCollector() (resume func(), err error) {
	if e.gc == nil || e.gc.Process == nil {
		return nil, fmt.Errorf("no garbage collector runs in this environment")
	}
	if err := e.gc.Process.Signal(syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("stopping the garbage collector: %w", err)
	}
	var once sync.Once
	return func() { once.Do(func() { _ = e.gc.Process.Signal(syscall.SIGCONT) }) }, nil
}

// Stop shuts the control plane (and webhook server) down.
func (e *Env) Stop() error {
	if e.gc != nil && e.gc.Process != nil {
		_ = e.gc.Process.Kill()
		_ = e.gc.Wait()
	}
	if e.cancel != nil {
		e.cancel()
		if err := <-e.done; err != nil {
			return err
		}
	}
	return e.env.Stop()
}
