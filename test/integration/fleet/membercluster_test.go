package fleet

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/hub"
	"github.com/lockstep-dev/lockstep/internal/hub/membercluster"
	"github.com/lockstep-dev/lockstep/internal/hub/members"
	"github.com/lockstep-dev/lockstep/internal/testenv"
)

// Probing fast keeps the tests short; the hub's default is 5 s.
var testProbes = hub.Options{ProbeInterval: time.Second, ProbeTimeout: time.Second, FleetNamespace: testenv.FleetNamespace}

// runHub runs both hub controllers with a fresh member registry.
// deploymentKind is the kind the registry's connections are asked for here.
var deploymentKind = appsv1.SchemeGroupVersion.WithKind("Deployment")

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

// createSecret creates a kubeconfig Secret in the hub's fleet namespace, the
// only one the hub reads them from; tests share it, so names carry the test's.
func createSecret(t *testing.T, name string, data map[string][]byte) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.FleetNamespace, Name: name}, Data: data}
	if err := hubEnv.Client.Create(context.Background(), s); err != nil {
		t.Fatalf("creating Secret %s: %v", name, err)
	}
	t.Cleanup(func() { _ = hubEnv.Client.Delete(context.Background(), s) })
}

// createMemberCluster creates a MemberCluster reading Secret secretName of the
// fleet namespace.
func createMemberCluster(t *testing.T, name, secretName string, lbls map[string]string) {
	t.Helper()
	mc := &fleetv1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls},
		Spec: fleetv1alpha1.MemberClusterSpec{KubeconfigSecretRef: fleetv1alpha1.KubeconfigSecretReference{
			Namespace: testenv.FleetNamespace, Name: secretName,
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

func waitForReady(t *testing.T, name string, status metav1.ConditionStatus, reason fleetv1alpha1.MemberClusterReason, timeout time.Duration) *fleetv1alpha1.MemberCluster {
	t.Helper()
	var mc *fleetv1alpha1.MemberCluster
	eventually(t, timeout, name+" Ready="+string(status)+" "+string(reason), func() (bool, string) {
		var c *metav1.Condition
		mc, c = readyCondition(t, name)
		if c == nil {
			return false, "no Ready condition"
		}
		return c.Status == status && c.Reason == string(reason), string(c.Status) + " " + c.Reason + ": " + c.Message
	})
	return mc
}

func TestMemberCluster_ReadyReasonSaysWhichStepFailed(t *testing.T) {
	reg := runHub(t)
	good := memberKubeconfig(t, nil)
	cases := []struct {
		name   string
		data   map[string][]byte // nil: no Secret at all
		reason fleetv1alpha1.MemberClusterReason
	}{
		{"mc-good", map[string][]byte{"kubeconfig": good}, fleetv1alpha1.MemberClusterReasonReachable},
		{"mc-no-secret", nil, fleetv1alpha1.MemberClusterReasonSecretNotFound},
		{"mc-no-key", map[string][]byte{"config": good}, fleetv1alpha1.MemberClusterReasonKubeconfigKeyMissing},
		{"mc-garbage", map[string][]byte{"kubeconfig": []byte("this is not a kubeconfig: [")}, fleetv1alpha1.MemberClusterReasonKubeconfigInvalid},
		{"mc-bad-token", map[string][]byte{"kubeconfig": memberKubeconfig(t, func(a *access) { a.token = "not-a-valid-token" })}, fleetv1alpha1.MemberClusterReasonUnauthorized},
		{"mc-unreachable", map[string][]byte{"kubeconfig": memberKubeconfig(t, withServer("127.0.0.1:1"))}, fleetv1alpha1.MemberClusterReasonUnreachable},
	}
	for _, tc := range cases {
		if tc.data != nil {
			createSecret(t, tc.name, tc.data)
		}
		createMemberCluster(t, tc.name, tc.name, nil)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := metav1.ConditionFalse
			if tc.reason == fleetv1alpha1.MemberClusterReasonReachable {
				want = metav1.ConditionTrue
			}
			mc := waitForReady(t, tc.name, want, tc.reason, 20*time.Second)
			_, connected := reg.Get(tc.name, deploymentKind)
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

	parent := t
	t.Run("a Secret created later is picked up", func(t *testing.T) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.FleetNamespace, Name: "mc-no-secret"}, Data: map[string][]byte{"kubeconfig": good}}
		if err := hubEnv.Client.Create(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		parent.Cleanup(func() { _ = hubEnv.Client.Delete(context.Background(), s) }) // the next subtests use it
		waitForReady(t, "mc-no-secret", metav1.ConditionTrue, fleetv1alpha1.MemberClusterReasonReachable, 10*time.Second)
	})
	t.Run("a changed kubeconfig replaces the connection", func(t *testing.T) {
		before, ok := reg.Get("mc-no-secret", deploymentKind)
		if !ok {
			t.Fatal("no connection to mc-no-secret")
		}
		var s corev1.Secret
		if err := hubEnv.Client.Get(context.Background(), client.ObjectKey{Namespace: testenv.FleetNamespace, Name: "mc-no-secret"}, &s); err != nil {
			t.Fatal(err)
		}
		s.Data["kubeconfig"] = memberKubeconfig(t, nil) // a new user's credentials
		if err := hubEnv.Client.Update(context.Background(), &s); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "a new connection to mc-no-secret", func() (bool, string) {
			after, ok := reg.Get("mc-no-secret", deploymentKind)
			return ok && after != before, "same connection"
		})
	})
	t.Run("a deleted MemberCluster loses its connection", func(t *testing.T) {
		if _, ok := reg.Get("mc-good", deploymentKind); !ok {
			t.Fatal("no connection to mc-good")
		}
		if err := hubEnv.Client.Delete(context.Background(), &fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "mc-good"}}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "connection to mc-good dropped", func() (bool, string) {
			_, ok := reg.Get("mc-good", deploymentKind)
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
	createSecret(t, ns+"-direct", map[string][]byte{"kubeconfig": memberKubeconfig(t, nil)})
	createSecret(t, ns+"-proxied", map[string][]byte{"kubeconfig": memberKubeconfig(t, withServer(p.addr))})
	lbls := map[string]string{"fleet-test": ns}
	createMemberCluster(t, "stop-a-direct", ns+"-direct", lbls)
	createMemberCluster(t, "stop-b-proxied", ns+"-proxied", lbls)
	waitForReady(t, "stop-a-direct", metav1.ConditionTrue, fleetv1alpha1.MemberClusterReasonReachable, 20*time.Second)
	waitForReady(t, "stop-b-proxied", metav1.ConditionTrue, fleetv1alpha1.MemberClusterReasonReachable, 20*time.Second)
	conn, ok := reg.Get("stop-b-proxied", deploymentKind)
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
	waitForReady(t, "stop-b-proxied", metav1.ConditionFalse, fleetv1alpha1.MemberClusterReasonUnreachable, 30*time.Second)
	t.Logf("Ready=False %s after the member stopped answering", time.Since(stopped).Round(100*time.Millisecond))
	waitForState(t, w, []sliceWant{{1, 0, []string{"stop-a-direct"}}})
	if again, ok := reg.Get("stop-b-proxied", deploymentKind); !ok || again != conn {
		t.Errorf("the connection to a member that is only unreachable was replaced or dropped")
	}

	p.open()
	waitForReady(t, "stop-b-proxied", metav1.ConditionTrue, fleetv1alpha1.MemberClusterReasonReachable, 30*time.Second)
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
// Secrets' metadata, of the fleet namespace only: its cache holds no Secret of
// the hub cluster and no metadata of Secrets elsewhere, while a MemberCluster
// still becomes Ready from one.
func TestMemberCluster_TheHubCachesNoSecret(t *testing.T) {
	ns := newNamespace(t, "mc-nosecrets")
	elsewhere := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "not-for-the-hub"}}
	if err := hubEnv.Client.Create(context.Background(), elsewhere); err != nil {
		t.Fatal(err)
	}
	opts := hubEnv.ManagerOptions()
	// a read of a type nobody watches fails instead of starting an informer
	opts.Cache.ReaderFailOnMissingInformer = true
	opts.Cache.ByObject = hub.CacheByObject(testenv.FleetNamespace) // as `lockstep hub` does
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
	createSecret(t, "mc-nosecrets", map[string][]byte{"kubeconfig": memberKubeconfig(t, nil)})
	createMemberCluster(t, "mc-nosecrets", "mc-nosecrets", nil)
	waitForReady(t, "mc-nosecrets", metav1.ConditionTrue, fleetv1alpha1.MemberClusterReasonReachable, 20*time.Second)

	var notCached *cache.ErrResourceNotCached
	if err := mgr.GetCache().List(ctx, &corev1.SecretList{}); !errors.As(err, &notCached) {
		t.Fatalf("listing Secrets from the hub's cache: %v, want ErrResourceNotCached (the hub must not cache Secrets)", err)
	}
	var metas metav1.PartialObjectMetadataList
	metas.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := mgr.GetCache().List(ctx, &metas); err != nil {
		t.Fatalf("listing Secret metadata from the hub's cache: %v", err)
	}
	found := false
	for _, m := range metas.Items {
		if m.Namespace != testenv.FleetNamespace {
			t.Errorf("the hub's cache holds the metadata of Secret %s/%s, outside the fleet namespace", m.Namespace, m.Name)
		}
		found = found || m.Name == "mc-nosecrets"
	}
	if !found {
		t.Errorf("the kubeconfig Secret's metadata is not in the hub's cache (%d items)", len(metas.Items))
	}
}

// A kubeconfig whose user names a token file (as the hub's own service-account
// token at /var/run/secrets/kubernetes.io/serviceaccount/token would be) is
// refused: the "member", a listener of the test's, sees no connection at all.
// The positive control, a hub started with AllowExec, shows that the same
// kubeconfig does carry the file's token to the listener, so it is the refusal
// that keeps the token home. The listener serves TLS (its CA is in the
// kubeconfig): client-go attaches a kubeconfig's credentials to https servers
// only, so that is what a thief would run.
func TestMemberCluster_AKubeconfigCannotSendTheHubsFiles(t *testing.T) {
	const token = "the-hubs-own-token-4f9d2"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	var (
		mu          sync.Mutex
		connections int
		requests    []string
	)
	listener := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests = append(requests, r.Method+" "+r.URL.Path+" Authorization: "+r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "not an apiserver", http.StatusNotFound)
	}))
	listener.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			connections++
			mu.Unlock()
		}
	}
	listener.StartTLS()
	t.Cleanup(listener.Close)
	received := func() (int, []string) {
		mu.Lock()
		defer mu.Unlock()
		return connections, slices.Clone(requests)
	}
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: listener.Certificate().Raw})
	kubeconfig, err := clientcmd.Write(clientcmdapi.Config{
		CurrentContext: "m1",
		Contexts:       map[string]*clientcmdapi.Context{"m1": {Cluster: "m1", AuthInfo: "m1-admin"}},
		Clusters:       map[string]*clientcmdapi.Cluster{"m1": {Server: listener.URL, CertificateAuthorityData: ca}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"m1-admin": {TokenFile: tokenFile}},
	})
	if err != nil {
		t.Fatal(err)
	}
	createSecret(t, "mc-tokenfile", map[string][]byte{"kubeconfig": kubeconfig})
	createMemberCluster(t, "mc-tokenfile", "mc-tokenfile", nil)

	reg := members.NewRegistry(memberEnv.Scheme, ctrl.Log.WithName("members"))
	stop := runManager(t, func(mgr ctrl.Manager) error { return hub.Setup(mgr, reg, testProbes) })
	mc := waitForReady(t, "mc-tokenfile", metav1.ConditionFalse, fleetv1alpha1.MemberClusterReasonKubeconfigRejected, 20*time.Second)
	if c := meta.FindStatusCondition(mc.Status.Conditions, string(fleetv1alpha1.MemberClusterReady)); !strings.Contains(c.Message, `users["m1-admin"].user.tokenFile`) {
		t.Errorf("the condition does not name the field: %s", c.Message)
	}
	waitForMemberEvent(t, "mc-tokenfile", fleetv1alpha1.MemberClusterReasonKubeconfigRejected, `users["m1-admin"].user.tokenFile`)
	stop() // every probe of this hub is over
	if conns, got := received(); conns != 0 || len(got) != 0 {
		t.Fatalf("a hub with the default options opened %d connections to the listener and sent %q", conns, got)
	}

	allowExec := testProbes
	allowExec.AllowExec = true
	runManager(t, func(mgr ctrl.Manager) error {
		return hub.Setup(mgr, members.NewRegistry(memberEnv.Scheme, ctrl.Log.WithName("members")), allowExec)
	})
	eventually(t, 20*time.Second, "the listener receives the token (positive control: AllowExec)", func() (bool, string) {
		_, got := received()
		for _, r := range got {
			if strings.HasSuffix(r, "Authorization: Bearer "+token) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("requests: %q", got)
	})
}

// A Ready member whose kubeconfig is changed to one the hub refuses loses its
// connection and turns Ready=False with reason KubeconfigRejected.
func TestMemberCluster_ARefusedKubeconfigDropsTheConnection(t *testing.T) {
	reg := runHub(t)
	createSecret(t, "mc-turns-insecure", map[string][]byte{"kubeconfig": memberKubeconfig(t, nil)})
	createMemberCluster(t, "mc-turns-insecure", "mc-turns-insecure", nil)
	waitForReady(t, "mc-turns-insecure", metav1.ConditionTrue, fleetv1alpha1.MemberClusterReasonReachable, 20*time.Second)
	if _, ok := reg.Get("mc-turns-insecure", deploymentKind); !ok {
		t.Fatal("no connection to mc-turns-insecure")
	}

	cfg, err := clientcmd.Load(memberKubeconfig(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	field := ""
	for name, c := range cfg.Clusters {
		c.CertificateAuthorityData, c.InsecureSkipTLSVerify = nil, true
		field = fmt.Sprintf("clusters[%q].cluster.insecure-skip-tls-verify", name)
	}
	insecure, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	var s corev1.Secret
	if err := hubEnv.Client.Get(context.Background(), client.ObjectKey{Namespace: testenv.FleetNamespace, Name: "mc-turns-insecure"}, &s); err != nil {
		t.Fatal(err)
	}
	s.Data["kubeconfig"] = insecure
	if err := hubEnv.Client.Update(context.Background(), &s); err != nil {
		t.Fatal(err)
	}
	mc := waitForReady(t, "mc-turns-insecure", metav1.ConditionFalse, fleetv1alpha1.MemberClusterReasonKubeconfigRejected, 20*time.Second)
	if c := meta.FindStatusCondition(mc.Status.Conditions, string(fleetv1alpha1.MemberClusterReady)); !strings.Contains(c.Message, field) {
		t.Errorf("the condition does not name %s: %s", field, c.Message)
	}
	if _, ok := reg.Get("mc-turns-insecure", deploymentKind); ok {
		t.Error("the hub kept its connection to a member whose kubeconfig it refuses")
	}
	waitForMemberEvent(t, "mc-turns-insecure", fleetv1alpha1.MemberClusterReasonKubeconfigRejected, field)
}

// Should a MemberCluster naming a Secret outside the fleet namespace get past
// admission, the controller refuses it too, without reading the Secret. Here
// the webhook's fleet namespace holds the Secret and the controller runs with
// another one.
func TestMemberCluster_ASecretOutsideTheFleetNamespaceIsNeverRead(t *testing.T) {
	const elsewhere = "lockstep-fleet-of-another-hub"
	createSecret(t, "mc-other-hubs", map[string][]byte{"kubeconfig": memberKubeconfig(t, nil)})
	createMemberCluster(t, "mc-other-hubs", "mc-other-hubs", nil)
	var reads atomic.Int32
	reg := members.NewRegistry(memberEnv.Scheme, ctrl.Log.WithName("members"))
	runManager(t, func(mgr ctrl.Manager) error {
		return (&membercluster.Reconciler{
			Client:         secretReadCounter{Client: mgr.GetClient(), reads: &reads},
			SecretReader:   secretReadCounter{Client: mgr.GetClient(), reader: mgr.GetAPIReader(), reads: &reads},
			Members:        reg,
			Recorder:       mgr.GetEventRecorder("test-membercluster"),
			ProbeInterval:  testProbes.ProbeInterval,
			ProbeTimeout:   testProbes.ProbeTimeout,
			FleetNamespace: elsewhere,
		}).SetupWithManager(mgr)
	})
	mc := waitForReady(t, "mc-other-hubs", metav1.ConditionFalse, fleetv1alpha1.MemberClusterReasonKubeconfigRejected, 20*time.Second)
	c := meta.FindStatusCondition(mc.Status.Conditions, string(fleetv1alpha1.MemberClusterReady))
	for _, want := range []string{"spec.kubeconfigSecretRef.namespace", `"` + elsewhere + `"`} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("the condition does not name %s: %s", want, c.Message)
		}
	}
	waitForMemberEvent(t, "mc-other-hubs", fleetv1alpha1.MemberClusterReasonKubeconfigRejected, "spec.kubeconfigSecretRef.namespace")
	if n := reads.Load(); n != 0 {
		t.Errorf("the controller read the Secret %d times", n)
	}
	if _, ok := reg.Get("mc-other-hubs", deploymentKind); ok {
		t.Error("the hub connected to the member")
	}
}

// secretReadCounter counts the reads of Secrets, whole or their metadata, and
// passes every read on (to reader when set).
type secretReadCounter struct {
	client.Client
	reader client.Reader
	reads  *atomic.Int32
}

func (c secretReadCounter) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if gvk, err := apiutil.GVKForObject(obj, c.Scheme()); err == nil && gvk.Group == "" && gvk.Kind == "Secret" {
		c.reads.Add(1)
	}
	if c.reader != nil {
		return c.reader.Get(ctx, key, obj, opts...)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// waitForMemberEvent waits for an Event about the MemberCluster with the
// reason and a note containing text.
func waitForMemberEvent(t *testing.T, mc string, reason fleetv1alpha1.MemberClusterReason, text string) {
	t.Helper()
	eventually(t, 20*time.Second, "an Event "+string(reason)+" on "+mc, func() (bool, string) {
		var list eventsv1.EventList
		if err := hubEnv.Client.List(context.Background(), &list); err != nil {
			return false, err.Error()
		}
		var notes []string
		for _, e := range list.Items {
			if e.Regarding.Kind != "MemberCluster" || e.Regarding.Name != mc || e.Reason != string(reason) {
				continue
			}
			if strings.Contains(e.Note, text) {
				return true, ""
			}
			notes = append(notes, e.Note)
		}
		return false, fmt.Sprintf("notes: %q", notes)
	})
}
