//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/config"
	"github.com/lockstep-dev/lockstep/internal/testenv"
	"github.com/lockstep-dev/lockstep/test/e2e/cluster"
)

// operator is the lockstep binary, built from this checkout, running as its own
// process against the e2e cluster with its admission webhooks (--dev-webhooks),
// as `make run` runs it. Being a process, it can be killed (SIGKILL) and
// restarted by the tests, and its memory is its own.
type operator struct {
	bin, kubeconfig, certDir string
	// LogPath is where every run of the operator logs, one after another.
	LogPath string
	// probePort and webhookPort stay the same across restarts: the webhook
	// configurations left by a killed run keep pointing at the right port.
	probePort, webhookPort, metricsPort int
	// leaderElect runs the operator with leader election (the Lease in
	// namespace default); serveOnly leaves the webhook configurations to
	// another replica (--dev-webhooks off) and serves with the certificates
	// already in certDir.
	leaderElect, serveOnly bool

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
	runs    int
	peakRSS uint64 // the highest VmHWM of any run, read just before it ends
}

// startOperator installs the CRDs (as `make install` does), builds the binary
// and starts it. The cluster's client learns Lockstep's kinds.
func startOperator(ctx context.Context, c *cluster.Cluster) (*operator, error) {
	if err := v1alpha1.AddToScheme(c.Scheme); err != nil {
		return nil, err
	}
	var err error
	if c.Client, err = client.New(c.RESTConfig, client.Options{Scheme: c.Scheme}); err != nil {
		return nil, err
	}
	if err := installCRDs(c.RESTConfig); err != nil {
		return nil, err
	}
	o := &operator{
		bin:        filepath.Join(c.DevDir, "lockstep"),
		kubeconfig: c.Kubeconfig,
		certDir:    filepath.Join(c.DevDir, "webhook-certs"),
		LogPath:    filepath.Join(c.DevDir, "operator.log"),
	}
	build := exec.CommandContext(ctx, "go", "build", "-o", o.bin, "./cmd/lockstep")
	build.Dir = c.Root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the operator: %w\n%s", err, out)
	}
	if o.probePort, err = testenv.FreePort(); err != nil {
		return nil, err
	}
	if o.webhookPort, err = testenv.FreePort(); err != nil {
		return nil, err
	}
	if o.metricsPort, err = testenv.FreePort(); err != nil {
		return nil, err
	}
	if err := os.WriteFile(o.LogPath, nil, 0o644); err != nil {
		return nil, err
	}
	return o, o.start(ctx)
}

// envOperatorLogLevel is the operators' --log-level (info when unset); make
// chaos sets debug, so that a violation's log holds every plan's inputs.
const envOperatorLogLevel = "LOCKSTEP_E2E_OPERATOR_LOG_LEVEL"

// envOperatorPprof, when set, is the address the operator serves Go's
// profiler on (--pprof-bind-address), to see where a benchmark's CPU goes.
const envOperatorPprof = "LOCKSTEP_E2E_OPERATOR_PPROF"

// start runs the operator and waits until its webhooks answer through the
// apiserver, so that the next write a test makes is admitted by this run.
func (o *operator) start(ctx context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cmd != nil {
		return errors.New("the operator is already running")
	}
	log, err := os.OpenFile(o.LogPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	o.runs++
	fmt.Fprintf(log, "=== run %d of the operator, %s\n", o.runs, time.Now().Format(time.RFC3339Nano))
	args := []string{"operator",
		"--kubeconfig", o.kubeconfig,
		"--webhook-cert-dir", o.certDir, "--webhook-port", strconv.Itoa(o.webhookPort),
		"--metrics-bind-address", "127.0.0.1:" + strconv.Itoa(o.metricsPort),
		"--health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(o.probePort)}
	if level := os.Getenv(envOperatorLogLevel); level != "" {
		args = append(args, "--log-level", level)
	}
	if addr := os.Getenv(envOperatorPprof); addr != "" {
		args = append(args, "--pprof-bind-address", addr)
	}
	if analysisProm != "" {
		args = append(args, "--analysis-prometheus-address", analysisProm)
	}
	if o.serveOnly {
		args = append(args, "--cert-secret=") // no rotator: the certificates are in certDir
	} else {
		args = append(args, "--dev-webhooks")
	}
	if o.leaderElect {
		args = append(args, "--leader-elect=true", "--leader-election-namespace", leaseNamespace)
	} else {
		args = append(args, "--leader-elect=false")
	}
	cmd := exec.Command(o.bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return fmt.Errorf("starting the operator: %w", err)
	}
	o.cmd, o.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) {
		err := cmd.Wait()
		_ = log.Close()
		o.mu.Lock()
		o.waitErr = err
		o.mu.Unlock()
		close(exited)
	}(o.exited)
	return o.awaitAdmission(ctx, o.exited)
}

// awaitAdmission polls until the process is ready and a dry-run create of an
// invalid PodCliqueSet is refused by this run's validating webhook (the
// configuration carries a new CA bundle every run).
func (o *operator) awaitAdmission(ctx context.Context, exited chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	probe := fmt.Sprintf("http://127.0.0.1:%d/readyz", o.probePort)
	last := "not polled yet"
	for {
		select {
		case <-exited:
			return fmt.Errorf("the operator exited while starting; see %s", o.LogPath)
		case <-ctx.Done():
			return fmt.Errorf("the operator's webhooks did not answer within 90s (last: %s); see %s", last, o.LogPath)
		case <-time.After(200 * time.Millisecond):
		}
		resp, err := http.Get(probe)
		if err != nil {
			last = err.Error()
			continue
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			last = "readyz " + resp.Status
			continue
		}
		err = testCluster.Client.Create(ctx, admissionProbe(), client.DryRunAll)
		if err != nil && strings.Contains(err.Error(), "must name a standalone clique or a scaling group") {
			return nil
		}
		last = fmt.Sprintf("dry run: %v", err)
	}
}

// admissionProbe is a PodCliqueSet only the validating webhook refuses: a role
// step naming a role that does not exist.
func admissionProbe() *v1alpha1.PodCliqueSet {
	pcs := &v1alpha1.PodCliqueSet{}
	pcs.Namespace, pcs.Name = "default", "admission-probe"
	pcs.Spec.Template.Cliques = []v1alpha1.PodCliqueTemplateSpec{{Name: "frontend", Replicas: 1}}
	pcs.Spec.Template.Cliques[0].Template.Spec.Containers = []corev1.Container{{Name: "main", Image: "lockstep-examples/probe:v1"}}
	pcs.Spec.UpdateStrategy.RoleUpgrade = &v1alpha1.RoleUpgrade{Steps: []v1alpha1.RoleUpgradeStep{{Role: "nobody", UpdateTo: intstr.FromInt32(1)}}}
	return pcs
}

// kill ends the operator with SIGKILL, as a node failure or the OOM killer
// would: no cleanup runs, the webhook configurations stay registered.
func (o *operator) kill() error { return o.end(syscall.SIGKILL) }

// stop ends the operator with SIGTERM and waits for it to exit.
func (o *operator) stop() error { return o.end(syscall.SIGTERM) }

func (o *operator) end(sig syscall.Signal) error {
	o.mu.Lock()
	cmd, exited := o.cmd, o.exited
	o.mu.Unlock()
	if cmd == nil {
		return errors.New("the operator is not running")
	}
	select {
	case <-exited: // it ended on its own
		o.mu.Lock()
		defer o.mu.Unlock()
		o.cmd = nil
		if sig == syscall.SIGKILL {
			return nil
		}
		return o.waitErr
	default:
	}
	if hwm, err := peakRSS(cmd.Process.Pid); err == nil {
		o.mu.Lock()
		o.peakRSS = max(o.peakRSS, hwm)
		o.mu.Unlock()
	}
	if err := cmd.Process.Signal(sig); err != nil {
		return err
	}
	select {
	case <-exited:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		return errors.New("the operator did not exit within 60s of " + sig.String())
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cmd = nil
	if sig == syscall.SIGKILL {
		return nil
	}
	return o.waitErr
}

// restart kills the operator (SIGKILL) and starts it again.
func (o *operator) restart(ctx context.Context) error {
	if err := o.kill(); err != nil {
		return err
	}
	return o.start(ctx)
}

// The Lease the operator's replicas elect their leader with, under
// leaderElect.
const (
	leaseNamespace = "default"
	leaseName      = "operator.lockstep.dev"
)

// replica returns a second operator like o, with ports and a log of its own,
// that leaves the webhook configurations to o. It is not started.
func (o *operator) replica(name string) (*operator, error) {
	r := &operator{bin: o.bin, kubeconfig: o.kubeconfig, certDir: o.certDir, serveOnly: true,
		LogPath: strings.TrimSuffix(o.LogPath, ".log") + "-" + name + ".log"}
	var err error
	for _, port := range []*int{&r.probePort, &r.webhookPort, &r.metricsPort} {
		if *port, err = testenv.FreePort(); err != nil {
			return nil, err
		}
	}
	return r, os.WriteFile(r.LogPath, nil, 0o644)
}

// exitedOnItsOwn reports whether the process started last has ended
// without being stopped (after losing its Lease, say).
func (o *operator) exitedOnItsOwn() bool {
	o.mu.Lock()
	cmd, exited := o.cmd, o.exited
	o.mu.Unlock()
	if cmd == nil {
		return false
	}
	select {
	case <-exited:
		return true
	default:
		return false
	}
}

// pid is the process id of the running operator, or 0.
func (o *operator) pid() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cmd == nil {
		return 0
	}
	return o.cmd.Process.Pid
}

// metrics is the run's /metrics page (Prometheus text).
func (o *operator) metrics(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/metrics", o.metricsPort), nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	return string(body), nil
}

// leading reports whether this run holds the leader Lease, from its
// leader_election_master_status metric.
func (o *operator) leading(ctx context.Context) (bool, error) {
	body, err := o.metrics(ctx)
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "leader_election_master_status{") && strings.Contains(line, `name="`+leaseName+`"`) {
			return strings.HasSuffix(strings.TrimSpace(line), " 1"), nil
		}
	}
	return false, nil
}

// restartWith kills the operator and starts it again talking to the cluster
// through kubeconfig (a proxy's, say), with or without leader election; it
// returns the kubeconfig it used before.
func (o *operator) restartWith(ctx context.Context, kubeconfig string, leaderElect bool) (string, error) {
	if err := o.kill(); err != nil {
		return "", err
	}
	o.mu.Lock()
	was := o.kubeconfig
	o.kubeconfig, o.leaderElect = kubeconfig, leaderElect
	o.mu.Unlock()
	return was, o.start(ctx)
}

// settled reports whether this run of the operator has reconciled at least
// want[c] objects with controller c and has nothing queued, read from its
// Prometheus metrics; the string says what it saw.
func (o *operator) settled(ctx context.Context, want map[string]int) (bool, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/metrics", o.metricsPort), nil)
	if err != nil {
		return false, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err.Error(), nil // not up yet
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return false, err.Error(), nil
	}
	reconciled, queued := map[string]int{}, 0
	for _, line := range strings.Split(string(body), "\n") {
		name, rest, ok := strings.Cut(line, "{")
		if !ok || (name != "controller_runtime_reconcile_total" && name != "workqueue_depth") {
			continue
		}
		labels, value, _ := strings.Cut(rest, "} ")
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		if name == "workqueue_depth" {
			queued += int(v)
			continue
		}
		for _, l := range strings.Split(labels, ",") {
			if c, ok := strings.CutPrefix(l, `controller="`); ok {
				reconciled[strings.TrimSuffix(c, `"`)] += int(v)
			}
		}
	}
	state := fmt.Sprintf("reconciled %v, queued %d", reconciled, queued)
	if queued > 0 {
		return false, state, nil
	}
	for c, n := range want {
		if reconciled[c] < n {
			return false, state, nil
		}
	}
	return true, state, nil
}

// currentPeakRSS is the running operator's resident-set high-water mark.
func (o *operator) currentPeakRSS() (uint64, error) {
	o.mu.Lock()
	cmd := o.cmd
	o.mu.Unlock()
	if cmd == nil {
		return 0, errors.New("the operator is not running")
	}
	return peakRSS(cmd.Process.Pid)
}

// summary is one line for the end of the run.
func (o *operator) summary() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return fmt.Sprintf("%d runs, peak RSS of the operator process %.1f MiB", o.runs, float64(o.peakRSS)/(1<<20))
}

// peakRSS reads VmHWM, the resident set's high-water mark, of a process.
func peakRSS(pid int) (uint64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, errors.New("no VmHWM in /proc/<pid>/status")
}

// installCRDs creates the CRDs `make generate` writes (embedded in package
// config) and waits until the apiserver serves them.
func installCRDs(cfg *rest.Config) error {
	var crds []*apiextensionsv1.CustomResourceDefinition
	err := fs.WalkDir(config.CRDs, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := config.CRDs.ReadFile(path)
		if err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		crds = append(crds, crd)
		return nil
	})
	if err != nil {
		return err
	}
	if len(crds) == 0 {
		return errors.New("no CRDs embedded in package config")
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: crds, MaxTime: time.Minute}); err != nil {
		return fmt.Errorf("installing the CRDs: %w", err)
	}
	return nil
}
