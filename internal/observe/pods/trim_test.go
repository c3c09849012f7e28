package pods

import (
	"encoding/json"
	"runtime"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// A trimmed pod reads the same to every reader of the cache (the planner's
// unit, readiness, the waiting reason, the gang's scheduling group) and has
// no containers or volumes left.
func TestTrimForCache_KeepsWhatTheControllersRead(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	group := "g-0"
	full := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "a-0", Labels: map[string]string{v1alpha1.LabelPodIndex: "0", v1alpha1.LabelTemplateHash: "h1"},
			Annotations:       map[string]string{"note": "from the template"},
			CreationTimestamp: metav1.Time{Time: now.Add(-10 * time.Second)},
			ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "lockstep"}}},
		Spec: corev1.PodSpec{
			NodeName:        "n1",
			SchedulingGates: []corev1.PodSchedulingGate{{Name: "other"}},
			SchedulingGroup: &corev1.PodSchedulingGroup{PodGroupName: &group},
			Containers: []corev1.Container{{Name: "engine", Image: "engine:v1", Env: []corev1.EnvVar{{Name: "A", Value: "b"}},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}}},
			Volumes: []corev1.Volume{{Name: "cache"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
			Conditions: []corev1.PodCondition{{Type: corev1.PodInitialized, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.Time{Time: now.Add(-5 * time.Second)}}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "engine", Image: "engine:v1", ImageID: "sha256:x",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off"}}},
				{Name: "sidecar", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Time{Time: now}}}}}},
	}
	got, err := TrimForCache(full.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	trimmed := got.(*corev1.Pod)
	if len(trimmed.Spec.Containers) != 0 || len(trimmed.Spec.Volumes) != 0 || trimmed.ManagedFields != nil || trimmed.Status.PodIP != "" ||
		trimmed.Annotations != nil || trimmed.Status.ContainerStatuses[1].State.Running != nil {
		t.Fatalf("not trimmed: %+v", trimmed)
	}
	for _, c := range trimmed.Status.Conditions {
		if c.Type != corev1.PodReady && c.Type != corev1.PodScheduled {
			t.Errorf("condition %s kept; nothing reads it", c.Type)
		}
	}
	wantUnit, _ := Unit(full, 0, now)
	if u, _ := Unit(trimmed, 0, now); u != wantUnit {
		t.Errorf("unit %+v, want %+v", u, wantUnit)
	}
	if w, want := WaitingFor(trimmed), WaitingFor(full); w != want || w == "" {
		t.Errorf("waiting %q, want %q", w, want)
	}
	if trimmed.Spec.SchedulingGroup == nil || *trimmed.Spec.SchedulingGroup.PodGroupName != group || len(trimmed.Spec.SchedulingGates) != 1 {
		t.Errorf("scheduling group and gates %+v %+v", trimmed.Spec.SchedulingGroup, trimmed.Spec.SchedulingGates)
	}
	if other, _ := TrimForCache(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}); other.(*corev1.Node).Name != "n" {
		t.Errorf("a node changed: %+v", other)
	}
}

// Two pods decoded apart hold one copy of the strings they share once
// trimmed: their label keys and values, namespace and owner kind.
func TestTrimForCache_SharesTheStringsPodsRepeat(t *testing.T) {
	decode := func() *corev1.Pod {
		p := &corev1.Pod{}
		if err := json.Unmarshal([]byte(examplePod), p); err != nil {
			t.Fatal(err)
		}
		o, _ := TrimForCache(p)
		return o.(*corev1.Pod)
	}
	a, b := decode(), decode()
	same := func(what, x, y string) {
		t.Helper()
		if x != y || unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s: two copies of %q", what, x)
		}
	}
	for k := range a.Labels {
		var kb string
		for k2 := range b.Labels {
			if k2 == k {
				kb = k2
			}
		}
		same("label key", k, kb)
		same("label "+k, a.Labels[k], b.Labels[k])
	}
	same("namespace", a.Namespace, b.Namespace)
	same("owner kind", a.OwnerReferences[0].Kind, b.OwnerReferences[0].Kind)
	same("node", a.Spec.NodeName, b.Spec.NodeName)
}

// examplePod is a pod as the apiserver serves one of a disaggregated
// engine's: defaults, the service-account volume, the status a node writes.
const examplePod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"disagg-0-prefill-0-prefill-worker-1","namespace":"default",
"uid":"8c3d1a52-6d6f-4e54-9a0e-2f2b9c1d7e11","resourceVersion":"123456","creationTimestamp":"2026-01-01T00:00:00Z",
"labels":{"lockstep.dev/podcliqueset":"disagg","lockstep.dev/podcliqueset-replica-index":"0","lockstep.dev/podclique":"disagg-0-prefill-0-prefill-worker",
"lockstep.dev/clique":"prefill-worker","lockstep.dev/pod-index":"1","lockstep.dev/template-hash":"7d9f8c6b5","lockstep.dev/podcliqueset-revision":"5c7b9d8f6",
"lockstep.dev/podcliquescalinggroup":"prefill","lockstep.dev/podcliquescalinggroup-replica-index":"0"},
"annotations":{"pod-ready.stage.kwok.x-k8s.io/delay":"1s"},
"ownerReferences":[{"apiVersion":"lockstep.dev/v1alpha1","kind":"PodClique","name":"disagg-0-prefill-0-prefill-worker","uid":"1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901","controller":true,"blockOwnerDeletion":true}]},
"spec":{"hostname":"disagg-0-prefill-0-prefill-worker-1","subdomain":"disagg-0","nodeName":"node-1",
"containers":[{"name":"engine","image":"lockstep-examples/llm-engine:v1","command":["/engine"],"args":["--role=prefill","--tensor-parallel=8","--leader=$(LEADER_ADDRESS)"],
"env":[{"name":"LEADER_ADDRESS","value":"disagg-0-prefill-0-prefill-leader-0.disagg-0"},{"name":"ROLE","value":"prefill"},{"name":"MODEL","value":"example/model-70b"},
{"name":"POD_NAME","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.name"}}},{"name":"NCCL_DEBUG","value":"WARN"}],
"ports":[{"name":"http","containerPort":8000,"protocol":"TCP"},{"name":"nccl","containerPort":29500,"protocol":"TCP"}],
"resources":{"limits":{"nvidia.com/gpu":"8","memory":"512Gi"},"requests":{"cpu":"32","memory":"512Gi","nvidia.com/gpu":"8"}},
"readinessProbe":{"httpGet":{"path":"/health","port":8000,"scheme":"HTTP"},"periodSeconds":5,"timeoutSeconds":1,"successThreshold":1,"failureThreshold":3},
"volumeMounts":[{"name":"model-cache","mountPath":"/models"},{"name":"shm","mountPath":"/dev/shm"},{"name":"kube-api-access-x7k2p","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}],
"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],
"volumes":[{"name":"model-cache","emptyDir":{}},{"name":"shm","emptyDir":{"medium":"Memory","sizeLimit":"64Gi"}},
{"name":"kube-api-access-x7k2p","projected":{"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},{"configMap":{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}},
{"downwardAPI":{"items":[{"path":"namespace","fieldRef":{"apiVersion":"v1","fieldPath":"metadata.namespace"}}]}}],"defaultMode":420}}],
"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","serviceAccount":"default",
"securityContext":{},"schedulerName":"default-scheduler","priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority",
"tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}]},
"status":{"phase":"Running","conditions":[{"type":"PodReadyToStartContainers","status":"True","lastTransitionTime":"2026-01-01T00:00:01Z"},
{"type":"Initialized","status":"True","lastTransitionTime":"2026-01-01T00:00:01Z"},{"type":"Ready","status":"True","lastTransitionTime":"2026-01-01T00:00:02Z"},
{"type":"ContainersReady","status":"True","lastTransitionTime":"2026-01-01T00:00:02Z"},{"type":"PodScheduled","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}],
"hostIP":"10.0.0.7","hostIPs":[{"ip":"10.0.0.7"}],"podIP":"10.244.1.17","podIPs":[{"ip":"10.244.1.17"}],"startTime":"2026-01-01T00:00:00Z",
"containerStatuses":[{"name":"engine","state":{"running":{"startedAt":"2026-01-01T00:00:01Z"}},"lastState":{},"ready":true,"restartCount":0,
"image":"lockstep-examples/llm-engine:v1","imageID":"docker-pullable://lockstep-examples/llm-engine@sha256:0123456789abcdef","containerID":"containerd://abcdef0123456789","started":true}],
"qosClass":"Burstable"}}`

// The heap a cached pod takes, as decoded from the apiserver, with and
// without TrimForCache: make bench runs it (go test -bench CachedPod
// -benchmem ./internal/observe/pods/) and prints bytes per pod.
func BenchmarkCachedPod(b *testing.B) {
	for _, c := range []struct {
		name string
		trim func(any) (any, error)
	}{{"full", func(o any) (any, error) { return o, nil }}, {"trimmed", TrimForCache}} {
		b.Run(c.name, func(b *testing.B) {
			const n = 2000
			var before, after runtime.MemStats
			for b.Loop() {
				kept := make([]any, 0, n)
				runtime.GC()
				runtime.ReadMemStats(&before)
				for range n {
					p := &corev1.Pod{}
					if err := json.Unmarshal([]byte(examplePod), p); err != nil {
						b.Fatal(err)
					}
					o, _ := c.trim(p)
					kept = append(kept, o)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				runtime.KeepAlive(kept)
			}
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heap-bytes/pod")
		})
	}
}
