package fleet

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/hub"
	"github.com/lockstep-dev/lockstep/internal/hub/members"
)

// Probing fast keeps the tests short; the hub's default is 5 s.
var testProbes = hub.Options{ProbeInterval: time.Second, ProbeTimeout: time.Second}

// runHub runs both hub controllers with a fresh member registry.
func runHub(t *testing.T) *members.Registry {
	t.Helper()
	reg := members.NewRegistry(memberEnv.Scheme, ctrl.Log.WithName("members"))
	runManager(t, func(mgr ctrl.Manager) error { return hub.Setup(mgr, reg, testProbes) })
	return reg
}

// access is how a kubeconfig reaches the member: its server, and a bearer token
// instead of the client certificate when token is set.
type access struct {
	server, token string
}

// memberKubeconfig is a working kubeconfig for the member, changed by edit.
func memberKubeconfig(t *testing.T, edit func(*access)) []byte {
	t.Helper()
	data, err := memberEnv.Kubeconfig("hub")
	if err != nil {
		t.Fatal(err)
	}
	if edit == nil {
		return data
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		a := access{server: c.Server}
		edit(&a)
		c.Server = a.server
		if a.token != "" {
			for _, ai := range cfg.AuthInfos {
				ai.ClientCertificateData, ai.ClientKeyData, ai.Token = nil, nil, a.token
			}
		}
	}
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func withServer(addr string) func(*access) {
	return func(a *access) { a.server = "https://" + addr }
}

func createSecret(t *testing.T, ns, name string, data map[string][]byte) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
	if err := hubEnv.Client.Create(context.Background(), s); err != nil {
		t.Fatalf("creating Secret %s: %v", name, err)
	}
}

func createMemberCluster(t *testing.T, name, secretNS, secretName string, lbls map[string]string) {
	t.Helper()
	mc := &fleetv1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls},
		Spec: fleetv1alpha1.MemberClusterSpec{KubeconfigSecretRef: fleetv1alpha1.KubeconfigSecretReference{
			Namespace: secretNS, Name: secretName,
		}},
	}
	if err := hubEnv.Client.Create(context.Background(), mc); err != nil {
		t.Fatalf("creating MemberCluster %s: %v", name, err)
	}
	t.Cleanup(func() { _ = hubEnv.Client.Delete(context.Background(), mc) })
}

// readyCondition is the member's Ready condition, nil when not set yet.
func readyCondition(t *testing.T, name string) (*fleetv1alpha1.MemberCluster, *metav1.Condition) {
	t.Helper()
	var mc fleetv1alpha1.MemberCluster
	if err := hubEnv.Client.Get(context.Background(), client.ObjectKey{Name: name}, &mc); err != nil {
		t.Fatalf("reading MemberCluster %s: %v", name, err)
	}
	return &mc, meta.FindStatusCondition(mc.Status.Conditions, string(fleetv1alpha1.MemberClusterReady))
}

func waitForReady(t *testing.T, name string, status metav1.ConditionStatus, reason string, timeout time.Duration) *fleetv1alpha1.MemberCluster {
	t.Helper()
	var mc *fleetv1alpha1.MemberCluster
	eventually(t, timeout, name+" Ready="+string(status)+" "+reason, func() (bool, string) {
		var c *metav1.Condition
		mc, c = readyCondition(t, name)
		if c == nil {
			return false, "no Ready condition"
		}
		return c.Status == status && c.Reason == reason, string(c.Status) + " " + c.Reason + ": " + c.Message
	})
	return mc
}

func TestMemberCluster_ReadyReasonSaysWhichStepFailed(t *testing.T) {
	ns := newNamespace(t, "mc-reasons")
	reg := runHub(t)
	good := memberKubeconfig(t, nil)
	cases := []struct {
		name   string
		data   map[string][]byte // nil: no Secret at all
		reason string
	}{
		{"mc-good", map[string][]byte{"kubeconfig": good}, fleetv1alpha1.ReasonMemberReachable},
		{"mc-no-secret", nil, fleetv1alpha1.ReasonSecretNotFound},
		{"mc-no-key", map[string][]byte{"config": good}, fleetv1alpha1.ReasonKubeconfigKeyMissing},
		{"mc-garbage", map[string][]byte{"kubeconfig": []byte("this is not a kubeconfig: [")}, fleetv1alpha1.ReasonKubeconfigInvalid},
		{"mc-bad-token", map[string][]byte{"kubeconfig": memberKubeconfig(t, func(a *access) { a.token = "not-a-valid-token" })}, fleetv1alpha1.ReasonMemberUnauthorized},
		{"mc-unreachable", map[string][]byte{"kubeconfig": memberKubeconfig(t, withServer("127.0.0.1:1"))}, fleetv1alpha1.ReasonMemberUnreachable},
	}
	for _, tc := range cases {
		if tc.data != nil {
			createSecret(t, ns, tc.name, tc.data)
		}
		createMemberCluster(t, tc.name, ns, tc.name, nil)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := metav1.ConditionFalse
			if tc.reason == fleetv1alpha1.ReasonMemberReachable {
				want = metav1.ConditionTrue
			}
			mc := waitForReady(t, tc.name, want, tc.reason, 20*time.Second)
			_, connected := reg.Get(tc.name)
			if connected != (want == metav1.ConditionTrue) {
				t.Errorf("registry holds a connection: %v, want %v", connected, want == metav1.ConditionTrue)
			}
			if want == metav1.ConditionFalse {
				return
			}
			if mc.Status.KubernetesVersion == "" {
				t.Errorf("kubernetesVersion is empty")
			}
			if wantKinds := []string{"Deployment", "StatefulSet", "PodCliqueSet"}; !slices.Equal(mc.Status.WorkloadKinds, wantKinds) {
				t.Errorf("workloadKinds %v, want %v", mc.Status.WorkloadKinds, wantKinds)
			}
		})
	}

	t.Run("a Secret created later is picked up", func(t *testing.T) {
		createSecret(t, ns, "mc-no-secret", map[string][]byte{"kubeconfig": good})
		waitForReady(t, "mc-no-secret", metav1.ConditionTrue, fleetv1alpha1.ReasonMemberReachable, 10*time.Second)
	})
	t.Run("a changed kubeconfig replaces the connection", func(t *testing.T) {
		before, ok := reg.Get("mc-no-secret")
		if !ok {
			t.Fatal("no connection to mc-no-secret")
		}
		var s corev1.Secret
		if err := hubEnv.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "mc-no-secret"}, &s); err != nil {
			t.Fatal(err)
		}
		s.Data["kubeconfig"] = memberKubeconfig(t, nil) // a new user's credentials
		if err := hubEnv.Client.Update(context.Background(), &s); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "a new connection to mc-no-secret", func() (bool, string) {
			after, ok := reg.Get("mc-no-secret")
			return ok && after != before, "same connection"
		})
	})
	t.Run("a deleted MemberCluster loses its connection", func(t *testing.T) {
		if _, ok := reg.Get("mc-good"); !ok {
			t.Fatal("no connection to mc-good")
		}
		if err := hubEnv.Client.Delete(context.Background(), &fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "mc-good"}}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "connection to mc-good dropped", func() (bool, string) {
			_, ok := reg.Get("mc-good")
			return !ok, "still connected"
		})
	})
}

// A member whose apiserver stops answering turns Ready=False within 30 s and
// back once it answers again; a placement drops it meanwhile without losing
// the member that stays. The member is reached through a TCP proxy the test
// closes and reopens, which the hub cannot tell from an apiserver going away.
func TestMemberCluster_StoppedMemberTurnsNotReadyAndBack(t *testing.T) {
	ns := newNamespace(t, "mc-stop")
	p := newProxy(t, memberEnv.Config.Host)
	reg := runHub(t)
	createSecret(t, ns, "direct", map[string][]byte{"kubeconfig": memberKubeconfig(t, nil)})
	createSecret(t, ns, "proxied", map[string][]byte{"kubeconfig": memberKubeconfig(t, withServer(p.addr))})
	lbls := map[string]string{"fleet-test": ns}
	createMemberCluster(t, "stop-a-direct", ns, "direct", lbls)
	createMemberCluster(t, "stop-b-proxied", ns, "proxied", lbls)
	waitForReady(t, "stop-a-direct", metav1.ConditionTrue, fleetv1alpha1.ReasonMemberReachable, 20*time.Second)
	waitForReady(t, "stop-b-proxied", metav1.ConditionTrue, fleetv1alpha1.ReasonMemberReachable, 20*time.Second)
	conn, ok := reg.Get("stop-b-proxied")
	if !ok {
		t.Fatal("no connection to stop-b-proxied")
	}

	createPlacement(t, ns, &metav1.LabelSelector{MatchLabels: lbls}, "", "")
	w := startWatcher(t, ns)
	both := []string{"stop-a-direct", "stop-b-proxied"}
	waitForState(t, w, []sliceWant{{1, 0, both}})
	w.SetStay([]string{"stop-a-direct"})

	p.close()
	stopped := time.Now()
	waitForReady(t, "stop-b-proxied", metav1.ConditionFalse, fleetv1alpha1.ReasonMemberUnreachable, 30*time.Second)
	t.Logf("Ready=False %s after the member stopped answering", time.Since(stopped).Round(100*time.Millisecond))
	waitForState(t, w, []sliceWant{{1, 0, []string{"stop-a-direct"}}})
	if again, ok := reg.Get("stop-b-proxied"); !ok || again != conn {
		t.Errorf("the connection to a member that is only unreachable was replaced or dropped")
	}

	p.open()
	waitForReady(t, "stop-b-proxied", metav1.ConditionTrue, fleetv1alpha1.ReasonMemberReachable, 30*time.Second)
	waitForState(t, w, []sliceWant{{1, 0, both}})
	assertNoViolations(t, w)
}

// proxy forwards TCP connections to a target until closed; it can be opened
// again on the same address.
type proxy struct {
	t      *testing.T
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, target: u.Host, conns: map[net.Conn]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.close)
	return p
}

func (p *proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
}

func (p *proxy) forward(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[up] = true, true
	p.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
	_, _ = io.Copy(c, up)
	_ = c.Close()
}

// close stops accepting and cuts every open connection.
func (p *proxy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// open listens again on the same address.
func (p *proxy) open() {
	p.t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatalf("reopening the proxy on %s: %v", p.addr, err)
	}
	p.serve(ln)
}

// The hub reads a member's kubeconfig Secret past its cache and watches only
// Secrets' metadata: its cache holds no Secret of the hub cluster, while a
// MemberCluster still becomes Ready from one.
func TestMemberCluster_TheHubCachesNoSecret(t *testing.T) {
	ns := newNamespace(t, "mc-nosecrets")
	opts := hubEnv.ManagerOptions()
	// a read of a type nobody watches fails instead of starting an informer
	opts.Cache.ReaderFailOnMissingInformer = true
	mgr, err := ctrl.NewManager(hubEnv.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	reg := members.NewRegistry(memberEnv.Scheme, ctrl.Log.WithName("members"))
	if err := hub.Setup(mgr, reg, testProbes); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	createSecret(t, ns, "mc-nosecrets", map[string][]byte{"kubeconfig": memberKubeconfig(t, nil)})
	createMemberCluster(t, "mc-nosecrets", ns, "mc-nosecrets", nil)
	waitForReady(t, "mc-nosecrets", metav1.ConditionTrue, fleetv1alpha1.ReasonMemberReachable, 20*time.Second)

	var notCached *cache.ErrResourceNotCached
	if err := mgr.GetCache().List(ctx, &corev1.SecretList{}); !errors.As(err, &notCached) {
		t.Fatalf("listing Secrets from the hub's cache: %v, want ErrResourceNotCached (the hub must not cache Secrets)", err)
	}
	var metas metav1.PartialObjectMetadataList
	metas.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := mgr.GetCache().List(ctx, &metas, client.InNamespace(ns)); err != nil || len(metas.Items) != 1 {
		t.Fatalf("Secret metadata in the hub's cache: %d items, %v; want the one kubeconfig Secret", len(metas.Items), err)
	}
}
