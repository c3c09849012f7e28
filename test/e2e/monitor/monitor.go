// Package monitor watches one PodCliqueSet during an end-to-end test and fails
// the test the moment the operator breaks a rollout invariant (package
// internal/invariant holds the rules): too many units, too few available, an OnDelete update, two revisions in a
// ReplicaRecreate replica, role steps out of order, a partition or a pause not
// held. It keeps a timeline of what happened to pods and Lockstep objects, which
// a failing test prints and a passing one can assert orders on.
//
// The monitor has its own watches (informers), independent of the operator's,
// and judges every event against the PodCliqueSet spec: the pure checks live in
// invariants.go, the bookkeeping in recorder.go.
//
// In a test:
//
//	m := monitor.Start(ctx, t, cfg, ns, "demo") // before creating or changing the PodCliqueSet
//	// ... create it, change its template ...
//	if err := m.Poll(ctx, 5*time.Minute, rolloutDone); err != nil {
//		t.Fatal(err) // a violation ends the wait at once
//	}
//	m.ExpectDeletion(pod) // before deleting a pod by hand
//
// The test's cleanup fails it with the first violation and the timeline before it.
package monitor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// TB is the part of testing.TB the monitor uses.
type TB interface {
	Helper()
	Cleanup(func())
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	Failed() bool
}

// Options tune a Monitor; the zero value takes every default.
type Options struct {
	// SpecGrace is how long a superseded spec still counts once the
	// PodCliqueSet's status reports the newer generation: the operator's child
	// controllers may still act on what they were told before. Default 2s.
	SpecGrace time.Duration
	// MaxSpecLag is how long a superseded spec counts when the status never
	// reports the newer generation. Default 30s.
	MaxSpecLag time.Duration
	// TimelineSize is how many events the timeline keeps. Default 10000.
	TimelineSize int
	// ExcerptSize is how many events a violation carries. Default 40.
	ExcerptSize int
	// PollInterval is how often Poll evaluates its condition. Default 100ms.
	PollInterval time.Duration
	// SyncTimeout bounds the first listing of the watched objects. Default 30s.
	SyncTimeout time.Duration
	// DeletedByNodeAgent, when set, is asked about a pod deletion the checks
	// would charge to the operator (created: when the pod was made; seen:
	// when its deletion was). It reports whether the node agent deleted the
	// pod on its own, with its evidence; such a deletion is recorded, not
	// judged. The e2e suite asks kwok's log: kwok can delete a new pod that
	// took an old one's name (see docs/reliability.md).
	DeletedByNodeAgent func(pod string, created, seen time.Time) (evidence string, ok bool)
}

func (o Options) withDefaults() Options {
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	set(&o.SpecGrace, 2*time.Second)
	set(&o.MaxSpecLag, 30*time.Second)
	set(&o.PollInterval, 100*time.Millisecond)
	set(&o.SyncTimeout, 30*time.Second)
	if o.TimelineSize <= 0 {
		o.TimelineSize = 10000
	}
	if o.ExcerptSize <= 0 {
		o.ExcerptSize = 40
	}
	return o
}

// Monitor watches one PodCliqueSet. Its methods are safe for concurrent use.
type Monitor struct {
	opts Options

	mu       sync.Mutex
	rec      *recorder
	stopped  bool
	violated chan struct{} // closed at the first violation

	stopWatches context.CancelFunc
	watchesDone chan struct{}
	stopOnce    sync.Once
}

// Start watches PodCliqueSet pcsName in namespace with default Options.
func Start(ctx context.Context, t TB, cfg *rest.Config, namespace, pcsName string) *Monitor {
	t.Helper()
	return Options{}.Start(ctx, t, cfg, namespace, pcsName)
}

// Start watches PodCliqueSet pcsName in namespace (which need not exist yet)
// and the pods, PodCliques and PodCliqueScalingGroups labelled with it, until
// Stop, ctx's end, or the test's cleanup. The cleanup fails the test with the
// first violation and the timeline that led to it.
func (o Options) Start(ctx context.Context, t TB, cfg *rest.Config, namespace, pcsName string) *Monitor {
	t.Helper()
	m := newMonitor(o, time.Now())
	if err := m.watch(ctx, cfg, namespace, pcsName); err != nil {
		m.Stop()
		t.Fatalf("starting the invariant monitor for %s/%s: %v", namespace, pcsName, err)
	}
	t.Cleanup(func() {
		m.Stop()
		m.report(t)
	})
	return m
}

func newMonitor(o Options, start time.Time) *Monitor {
	o = o.withDefaults()
	return &Monitor{opts: o, rec: newRecorder(o, start), violated: make(chan struct{})}
}

// watch starts informers on the objects of one PodCliqueSet and waits until
// their first listing is recorded. Informers relist after a lost watch, so the
// timeline survives apiserver restarts (a change made and undone while
// disconnected is not seen).
func (m *Monitor) watch(ctx context.Context, cfg *rest.Config, namespace, pcsName string) error {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	reader, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	key := types.NamespacedName{Namespace: namespace, Name: pcsName}
	m.rec.readSpec = func() (*v1alpha1.PodCliqueSet, error) {
		readCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		pcs := &v1alpha1.PodCliqueSet{}
		return pcs, reader.Get(readCtx, key, pcs)
	}

	ofSet := labels.SelectorFromSet(labels.Set{v1alpha1.LabelPodCliqueSet: pcsName})
	c, err := cache.New(cfg, cache.Options{
		Scheme: scheme,
		DefaultWatchErrorHandler: func(_ context.Context, _ *toolscache.Reflector, err error) {
			m.locked(func(r *recorder, now time.Time) { r.lostWatch(now, err) })
		},
		// A relist after a watch that could not resume reports no error:
		// each informer's ListerWatcher says when it lists again.
		NewInformer: func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
			kind := fmt.Sprintf("%T", obj)
			return toolscache.NewSharedIndexInformer(newRelistNotifier(lw, func() {
				m.locked(func(r *recorder, now time.Time) { r.lostWatch(now, fmt.Errorf("%s listed again", kind)) })
			}), obj, resync, idx)
		},
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
		ByObject: map[client.Object]cache.ByObject{
			&v1alpha1.PodCliqueSet{}:          {Field: fields.OneTermEqualSelector("metadata.name", pcsName)},
			&v1alpha1.PodClique{}:             {Label: ofSet},
			&v1alpha1.PodCliqueScalingGroup{}: {Label: ofSet},
			&corev1.Pod{}:                     {Label: ofSet},
		},
	})
	if err != nil {
		return fmt.Errorf("creating the cache: %w", err)
	}
	watchCtx, cancel := context.WithCancel(ctx)

	// The PodCliqueSet first, so that its spec is usually known before the first
	// pod event; the checks read it past the watch when it is not.
	handlers := []struct {
		obj     client.Object
		handler toolscache.ResourceEventHandler
	}{
		{&v1alpha1.PodCliqueSet{}, m.setHandler()},
		{&v1alpha1.PodCliqueScalingGroup{}, m.groupHandler()},
		{&v1alpha1.PodClique{}, m.cliqueHandler()},
		{&corev1.Pod{}, m.podHandler()},
	}
	var synced []toolscache.ResourceEventHandlerRegistration
	for _, h := range handlers {
		inf, err := c.GetInformer(watchCtx, h.obj)
		if err != nil {
			cancel()
			return fmt.Errorf("watching %T: %w", h.obj, err)
		}
		reg, err := inf.AddEventHandler(h.handler)
		if err != nil {
			cancel()
			return fmt.Errorf("handling %T: %w", h.obj, err)
		}
		synced = append(synced, reg)
	}
	m.stopWatches, m.watchesDone = cancel, make(chan struct{})
	go func() {
		defer close(m.watchesDone)
		_ = c.Start(watchCtx)
	}()

	syncCtx, cancelSync := context.WithTimeout(watchCtx, m.opts.SyncTimeout)
	defer cancelSync()
	if !c.WaitForCacheSync(syncCtx) {
		return fmt.Errorf("the watches did not sync within %s", m.opts.SyncTimeout)
	}
	for _, reg := range synced {
		for !reg.HasSynced() {
			select {
			case <-syncCtx.Done():
				return fmt.Errorf("the first listing was not recorded within %s", m.opts.SyncTimeout)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	m.locked(func(r *recorder, now time.Time) {
		r.timeline.add(noLabels(now, MonitorStarted, namespace+"/"+pcsName,
			fmt.Sprintf("%d pods, %d podcliques, %d scaling groups present", len(r.snap.pods), len(r.snap.cliques), len(r.snap.groups))))
	})
	return nil
}

// locked runs f on the recorder unless the monitor is stopped, and signals the
// first violation.
func (m *Monitor) locked(f func(r *recorder, now time.Time)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	had := len(m.rec.violations)
	f(m.rec, time.Now())
	if had == 0 && len(m.rec.violations) > 0 {
		close(m.violated)
	}
}

// unwrap returns the object of a delete notification, which may be a tombstone
// when the watch missed the deletion.
func unwrap(obj any) any {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return obj
}

func (m *Monitor) podHandler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if p, ok := obj.(*corev1.Pod); ok {
				m.locked(func(r *recorder, now time.Time) {
					if !initial { // a list hands pods over in no order
						r.settleDooms(now, resourceVersion(p.ResourceVersion))
					}
					r.observePod(now, p, initial)
				})
			}
		},
		UpdateFunc: func(_, obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				m.locked(func(r *recorder, now time.Time) {
					r.settleDooms(now, resourceVersion(p.ResourceVersion))
					r.observePod(now, p, false)
				})
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				if p, ok := d.Obj.(*corev1.Pod); ok {
					m.missedPodDeletion(p)
				}
				return
			}
			if p, ok := obj.(*corev1.Pod); ok {
				m.locked(func(r *recorder, now time.Time) {
					r.settleDooms(now, resourceVersion(p.ResourceVersion))
					r.forgetPod(now, p.Name, "")
				})
			}
		},
	}
}

// relistSettle is how long the deletion of a pod that the watch missed waits
// before it is judged.
const relistSettle = time.Second

// missedPodDeletion handles a deletion the watch missed (the apiserver was
// away) and a relist found out: the pod stops counting at once, and its
// deletion is judged a moment later, once the rest of the relist is recorded
// (see recorder.missPod).
func (m *Monitor) missedPodDeletion(p *corev1.Pod) {
	name := p.Name
	m.locked(func(r *recorder, now time.Time) { r.missPod(now, name) })
	time.AfterFunc(relistSettle, func() {
		m.locked(func(r *recorder, now time.Time) { r.judgeMissedPod(now, name) })
	})
}

func (m *Monitor) cliqueHandler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if c, ok := obj.(*v1alpha1.PodClique); ok {
				m.locked(func(r *recorder, now time.Time) { r.observeClique(now, c, initial) })
			}
		},
		UpdateFunc: func(_, obj any) {
			if c, ok := obj.(*v1alpha1.PodClique); ok {
				m.locked(func(r *recorder, now time.Time) { r.observeClique(now, c, false) })
			}
		},
		DeleteFunc: func(obj any) {
			if c, ok := unwrap(obj).(*v1alpha1.PodClique); ok {
				m.locked(func(r *recorder, now time.Time) { r.forgetClique(now, c.Name, c.ResourceVersion) })
			}
		},
	}
}

func (m *Monitor) groupHandler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if g, ok := obj.(*v1alpha1.PodCliqueScalingGroup); ok {
				m.locked(func(r *recorder, now time.Time) { r.observeGroup(now, g, initial) })
			}
		},
		UpdateFunc: func(_, obj any) {
			if g, ok := obj.(*v1alpha1.PodCliqueScalingGroup); ok {
				m.locked(func(r *recorder, now time.Time) { r.observeGroup(now, g, false) })
			}
		},
		DeleteFunc: func(obj any) {
			if g, ok := unwrap(obj).(*v1alpha1.PodCliqueScalingGroup); ok {
				m.locked(func(r *recorder, now time.Time) { r.forgetGroup(now, g.Name) })
			}
		},
	}
}

func (m *Monitor) setHandler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, _ bool) {
			if s, ok := obj.(*v1alpha1.PodCliqueSet); ok {
				m.locked(func(r *recorder, now time.Time) { r.observeSet(now, s) })
			}
		},
		UpdateFunc: func(_, obj any) {
			if s, ok := obj.(*v1alpha1.PodCliqueSet); ok {
				m.locked(func(r *recorder, now time.Time) { r.observeSet(now, s) })
			}
		},
		DeleteFunc: func(obj any) {
			if s, ok := unwrap(obj).(*v1alpha1.PodCliqueSet); ok {
				m.locked(func(r *recorder, now time.Time) { r.forgetSet(now, s.Name) })
			}
		},
	}
}

// ExpectDeletion announces that the test is about to delete a pod, so that
// its deletion is not taken for the operator's. Call it before deleting.
func (m *Monitor) ExpectDeletion(podName string) {
	m.locked(func(r *recorder, now time.Time) {
		r.announce(now, expectedDeletion{name: podName}, "pod/"+podName)
	})
}

// ExpectDeletionOf announces that the test is about to delete every pod
// matching the labels (as they exist now), e.g. by deleting their PodClique.
func (m *Monitor) ExpectDeletionOf(selector labels.Set) {
	m.locked(func(r *recorder, now time.Time) {
		r.announce(now, expectedDeletion{selector: labels.SelectorFromSet(selector)}, "pods{"+selector.String()+"}")
	})
}

// ExpectReplicaDeletion announces the deletion of every pod of a PCS replica.
func (m *Monitor) ExpectReplicaDeletion(replica int32) {
	m.ExpectDeletionOf(labels.Set{v1alpha1.LabelPodCliqueSetReplicaIndex: fmt.Sprint(replica)})
}

// ExpectGroupReplicaDeletion announces the deletion of every pod of one
// scaling-group replica.
func (m *Monitor) ExpectGroupReplicaDeletion(replica int32, group string, groupReplica int32) {
	m.ExpectDeletionOf(labels.Set{
		v1alpha1.LabelPodCliqueSetReplicaIndex:          fmt.Sprint(replica),
		v1alpha1.LabelPodCliqueScalingGroup:             group,
		v1alpha1.LabelPodCliqueScalingGroupReplicaIndex: fmt.Sprint(groupReplica),
	})
}

// Err returns the first violation (a *Violation), or nil.
func (m *Monitor) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.rec.violations) == 0 {
		return nil
	}
	v := m.rec.violations[0]
	return &v
}

// Violations returns every violation recorded (at most 100), first first.
func (m *Monitor) Violations() []Violation {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Violation(nil), m.rec.violations...)
}

// Timeline returns the recorded events, oldest first (the most recent
// Options.TimelineSize of them).
func (m *Monitor) Timeline() []Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rec.timeline.events()
}

// WriteTimeline prints the timeline one event a line, times in seconds since
// the monitor started.
func (m *Monitor) WriteTimeline(w io.Writer) error {
	m.mu.Lock()
	events, start, dropped := m.rec.timeline.events(), m.rec.timeline.start, m.rec.timeline.dropped
	m.mu.Unlock()
	return writeEvents(w, start, dropped, events)
}

// Poll evaluates cond every Options.PollInterval until it holds, it fails,
// timeout passes or an invariant breaks, whichever comes first, so that a
// test stops at the moment of a violation rather than at its end.
func (m *Monitor) Poll(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(m.opts.PollInterval)
	defer tick.Stop()
	for {
		if err := m.Err(); err != nil {
			return err
		}
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return m.Err()
		}
		select {
		case <-ctx.Done():
			if err := m.Err(); err != nil {
				return err
			}
			return fmt.Errorf("condition not met within %s: %w", timeout, ctx.Err())
		case <-m.violated:
		case <-tick.C:
		}
	}
}

// Stop ends the watches; the timeline and violations stay readable. It is
// safe to call more than once.
func (m *Monitor) Stop() {
	m.stopOnce.Do(func() {
		m.mu.Lock()
		m.stopped = true
		m.mu.Unlock()
		if m.stopWatches != nil {
			m.stopWatches()
			<-m.watchesDone
		}
	})
}

// report fails the test with the first violation, or, when the test failed for
// another reason, logs the end of the timeline to help explain it.
func (m *Monitor) report(t TB) {
	t.Helper()
	var v *Violation
	if err := m.Err(); errors.As(err, &v) {
		t.Errorf("%s", v.Report())
		return
	}
	if t.Failed() {
		m.mu.Lock()
		tail, start := m.rec.timeline.tail(m.opts.ExcerptSize), m.rec.timeline.start
		m.mu.Unlock()
		var b bytes.Buffer
		_ = writeEvents(&b, start, 0, tail)
		t.Logf("invariant monitor: no invariant broken; the last %d events:\n%s", len(tail), b.String())
	}
}
