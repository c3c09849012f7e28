//go:build e2e

// Package cluster starts and stops throw-away local clusters for the
// end-to-end tests. It drives the same scripts as `make dev-up` (hack/dev), so
// the tests exercise exactly the cluster developers use: a real kube-apiserver,
// kube-scheduler (with native gang scheduling) and kube-controller-manager, and
// GPU nodes simulated by kwok.
package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Env variables read by this package.
const (
	// EnvBin names the directory holding the pinned binaries (make sets it).
	EnvBin = "LOCKSTEP_BIN"
	// EnvKeep, when "1", leaves the cluster running after the tests.
	EnvKeep = "LOCKSTEP_E2E_KEEP"
)

// Options describe the cluster to start. Zero values take the defaults of
// hack/dev/up.sh, except Name and DevDir which are required.
type Options struct {
	// Name is the kwokctl cluster name; keep it distinct from the dev cluster.
	Name string
	// DevDir holds the cluster's state and kubeconfig; a relative path is
	// taken from the repository root.
	DevDir string
	// Nodes is the number of simulated GPU nodes to start with.
	Nodes int
	// GPUsPerNode is the nvidia.com/gpu capacity of each node.
	GPUsPerNode int
	// ReadyDelay and ReadyJitter: a bound pod turns Ready after ReadyDelay
	// plus a random extra of at most ReadyJitter. Zero jitter is exact.
	ReadyDelay, ReadyJitter time.Duration
}

// Cluster is a running local cluster.
type Cluster struct {
	Options
	// Bin is the directory of the pinned binaries.
	Bin string
	// Root is the repository's root directory.
	Root string
	// Kubeconfig is the path of the cluster's admin kubeconfig.
	Kubeconfig string
	// RESTConfig and Client talk to the cluster as admin.
	RESTConfig *rest.Config
	Client     client.Client
	// Scheme knows the built-in types, scheduling.k8s.io/v1alpha2 included.
	Scheme *runtime.Scheme

	scripts string

	// mu guards down and serialises starting components: the supervisor and
	// a test may both want to.
	mu sync.Mutex
	// down holds the components a test killed on purpose; the supervisor
	// leaves the control plane alone while any is down.
	down map[string]bool
}

// Components are the control-plane processes kwokctl runs for a cluster, by
// binary name.
var Components = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok-controller"}

// Start deletes any leftover cluster of the same name and starts a fresh one.
// It fails, rather than skipping, when the binaries are missing: CI must not
// pass by running nothing.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Name == "" || opts.DevDir == "" {
		return nil, errors.New("cluster: Name and DevDir are required")
	}
	bin := os.Getenv(EnvBin)
	if bin == "" {
		return nil, fmt.Errorf("%s is not set: run the e2e tests with 'make test-e2e' (or set it to the absolute bin/ directory)", EnvBin)
	}
	bin, err := filepath.Abs(bin)
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok", "kwokctl"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			return nil, fmt.Errorf("%s: %w (run 'make tools')", EnvBin, err)
		}
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	devDir := opts.DevDir
	if !filepath.IsAbs(devDir) {
		devDir = filepath.Join(root, devDir)
	}
	opts.DevDir = devDir

	c := &Cluster{
		Options:    opts,
		Bin:        bin,
		Root:       root,
		Kubeconfig: filepath.Join(devDir, "kubeconfig"),
		scripts:    filepath.Join(root, "hack", "dev"),
	}
	// A cluster kept by an earlier run may hold pods and nodes the tests do not
	// expect; always begin from nothing.
	if err := c.run(ctx, "down.sh"); err != nil {
		return nil, err
	}
	if err := c.run(ctx, "up.sh"); err != nil {
		return nil, err
	}

	c.RESTConfig, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", c.Kubeconfig, err)
	}
	// The tests create and poll many objects; client-side throttling would
	// only add noise to their timings.
	c.RESTConfig.QPS, c.RESTConfig.Burst = 200, 400
	c.Scheme = runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(c.Scheme); err != nil {
		return nil, err
	}
	c.Client, err = client.New(c.RESTConfig, client.Options{Scheme: c.Scheme})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// SetNodes makes the cluster have exactly n simulated GPU nodes
// (gpu-node-0 .. gpu-node-<n-1>) and waits for them to be Ready.
func (c *Cluster) SetNodes(ctx context.Context, n int) error {
	return c.run(ctx, "nodes.sh", strconv.Itoa(n))
}

// Stop deletes the cluster unless LOCKSTEP_E2E_KEEP=1.
func (c *Cluster) Stop(ctx context.Context) error {
	if Keep() {
		fmt.Fprintf(os.Stderr, "%s=1: leaving cluster %q running; KUBECONFIG=%s\n", EnvKeep, c.Name, c.Kubeconfig)
		return nil
	}
	return c.run(ctx, "down.sh")
}

// KwokDeletedPod looks in kwok's log for a deletion kwok itself made of pod
// namespace/name within [from, to], and returns its time. kwok logs "Delete
// pod" once its delete (by name, grace 0) has returned.
func (c *Cluster) KwokDeletedPod(namespace, name string, from, to time.Time) (time.Time, bool, error) {
	f, err := os.Open(filepath.Join(c.workdir(), "logs", "kwok-controller.log"))
	if err != nil {
		return time.Time{}, false, err
	}
	defer f.Close()
	want := namespace + "/" + name
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, []byte(`"Delete pod"`)) || !bytes.Contains(line, []byte(want)) {
			continue
		}
		var entry struct {
			Time time.Time `json:"time"`
			Msg  string    `json:"msg"`
			Pod  string    `json:"pod"`
		}
		if json.Unmarshal(line, &entry) != nil || entry.Msg != "Delete pod" || entry.Pod != want {
			continue
		}
		if !entry.Time.Before(from) && !entry.Time.After(to) {
			return entry.Time, true, nil
		}
	}
	return time.Time{}, false, sc.Err()
}

// SaveLogs copies the control plane's logs (kwokctl's logs/ directory) to
// dst, so that a failed run keeps them after Stop deletes the cluster.
func (c *Cluster) SaveLogs(dst string) error {
	src := filepath.Join(c.workdir(), "logs")
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Keep reports whether the cluster should outlive the tests.
func Keep() bool { return os.Getenv(EnvKeep) == "1" }

// run runs a hack/dev script for this cluster, its progress going to stderr.
func (c *Cluster) run(ctx context.Context, script string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.scripts, script), args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.Env = append(os.Environ(),
		"BIN="+c.Bin,
		"DEV="+c.DevDir,
		"LOCKSTEP_CLUSTER="+c.Name,
	)
	if c.Nodes > 0 {
		cmd.Env = append(cmd.Env, "NODES="+strconv.Itoa(c.Nodes))
	}
	if c.GPUsPerNode > 0 {
		cmd.Env = append(cmd.Env, "GPUS_PER_NODE="+strconv.Itoa(c.GPUsPerNode))
	}
	if c.ReadyDelay > 0 || c.ReadyJitter > 0 {
		// up.sh takes whole milliseconds ("1m0s" is not one of its formats).
		cmd.Env = append(cmd.Env,
			fmt.Sprintf("READY_DELAY=%dms", c.ReadyDelay.Milliseconds()),
			fmt.Sprintf("READY_JITTER=%dms", c.ReadyJitter.Milliseconds()),
		)
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/dev/%s: %w", script, err)
	}
	return nil
}

// RepoRoot finds the module root from the working directory, which `go test`
// sets to the package directory.
func RepoRoot() (string, error) {
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
			return "", errors.New("cluster: no go.mod above the working directory")
		}
		dir = parent
	}
}

// workdir is where kwokctl keeps this cluster's config, pids and logs (see
// hack/dev/lib.sh).
func (c *Cluster) workdir() string {
	return filepath.Join(c.DevDir, "kwok", "clusters", c.Name)
}

// ComponentPID is the process id kwokctl recorded for one of the cluster's
// components, by binary name: etcd, kube-apiserver, kube-scheduler,
// kube-controller-manager, kwok.
func (c *Cluster) ComponentPID(component string) (int, error) {
	data, err := os.ReadFile(filepath.Join(c.workdir(), "pids", component+".pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

// KillComponent ends one of the cluster's components with SIGKILL and waits
// until the process is dead. Its pid file goes with it: the processes kwokctl
// starts are orphans nobody reaps here, and kwokctl takes a zombie's pid for
// a running component, which StartComponents would then leave alone. It
// returns the pid it killed.
func (c *Cluster) KillComponent(component string) (int, error) {
	pid, err := c.ComponentPID(component)
	if err != nil {
		return 0, err
	}
	if alive, _ := processAlive(pid); !alive {
		return 0, fmt.Errorf("%s (pid %d) is not running", component, pid)
	}
	// Marked before the signal, so the supervisor never takes the kill for a
	// crash.
	c.mu.Lock()
	if c.down == nil {
		c.down = map[string]bool{}
	}
	c.down[component] = true
	c.mu.Unlock()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return 0, fmt.Errorf("killing %s (pid %d): %w", component, pid, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		alive, err := processAlive(pid)
		if err != nil {
			return 0, err
		}
		if !alive {
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%s (pid %d) still runs 10s after SIGKILL", component, pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := os.Remove(filepath.Join(c.workdir(), "pids", component+".pid")); err != nil {
		return 0, err
	}
	return pid, nil
}

// ComponentRunning reports whether the component has a live process (and its
// pid).
func (c *Cluster) ComponentRunning(component string) (int, bool) {
	pid, err := c.ComponentPID(component)
	if err != nil {
		return 0, false
	}
	alive, _ := processAlive(pid)
	return pid, alive
}

// StartComponents starts every component that is not running (`kwokctl start
// cluster`) and waits for the apiserver to serve. Components killed on purpose
// are no longer down on purpose.
func (c *Cluster) StartComponents(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.down)
	return c.run(ctx, "kwokctl.sh", "start", "cluster")
}

// StartKilled starts the components killed on purpose and not started again
// yet, if any, and reports whether there were some.
func (c *Cluster) StartKilled(ctx context.Context) (bool, error) {
	c.mu.Lock()
	killed := len(c.down) > 0
	c.mu.Unlock()
	if !killed {
		return false, nil
	}
	return true, c.StartComponents(ctx)
}

// Restart is one component the supervisor found dead and started again.
type Restart struct {
	Component string
	// PID is the process that had exited, Err what starting it again gave.
	PID int
	Err error
	At  time.Time
}

// Supervise does for the cluster's control plane what a kubelet does for
// static pods: every interval, a component that exited on its own (not one
// killed with KillComponent) is started again and reported. A real
// kube-scheduler exits when it finds its cache corrupted, for example after
// an apiserver restart, and counts on being restarted. It returns when ctx
// ends.
func (c *Cluster) Supervise(ctx context.Context, interval time.Duration, report func(Restart)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
		for _, r := range c.restartDead(ctx) {
			report(r)
		}
	}
}

// restartDead starts again the components that exited on their own, unless a
// component is down on purpose (`kwokctl start cluster` would start that one
// too).
func (c *Cluster) restartDead(ctx context.Context) []Restart {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.down) > 0 {
		return nil
	}
	var dead []Restart
	for _, component := range Components {
		pid, err := c.ComponentPID(component)
		if err != nil {
			continue // kwokctl runs no such component here
		}
		if alive, err := processAlive(pid); err != nil || alive {
			continue
		}
		// kwokctl would take the pid of an exited, unreaped process for a
		// running component.
		if err := os.Remove(filepath.Join(c.workdir(), "pids", component+".pid")); err != nil {
			continue
		}
		dead = append(dead, Restart{Component: component, PID: pid, At: time.Now()})
	}
	if len(dead) == 0 {
		return nil
	}
	err := c.run(ctx, "kwokctl.sh", "start", "cluster")
	for i := range dead {
		dead[i].Err = err
	}
	return dead
}

// processAlive reports whether pid is a process that has not exited: not
// gone, not a zombie.
func processAlive(pid int) (bool, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	// The state follows the command name in parentheses, which may hold spaces.
	_, rest, ok := strings.Cut(string(data), ") ")
	if !ok || rest == "" {
		return false, fmt.Errorf("cannot read /proc/%d/stat", pid)
	}
	return rest[0] != 'Z' && rest[0] != 'X', nil
}
