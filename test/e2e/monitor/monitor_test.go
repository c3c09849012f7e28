package monitor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// fakeTB records what the monitor reports to a test.
type fakeTB struct {
	cleanups []func()
	errs     []string
	logs     []string
	failed   bool
}

func (f *fakeTB) Helper()           {}
func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Failed() bool      { return f.failed || len(f.errs) > 0 }
func (f *fakeTB) Logf(s string, a ...any) {
	f.logs = append(f.logs, fmt.Sprintf(s, a...))
}
func (f *fakeTB) Errorf(s string, a ...any) {
	f.errs = append(f.errs, fmt.Sprintf(s, a...))
}
func (f *fakeTB) Fatalf(s string, a ...any) {
	f.Errorf(s, a...)
	panic("Fatalf")
}

func (f *fakeTB) runCleanups() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

// monitorOn wraps a world's recorder in a Monitor without watches.
func monitorOn(w *world, o Options) *Monitor {
	m := newMonitor(o, epoch)
	m.rec = w.rec
	return m
}

func TestPoll_ReturnsAtTheViolationNotAtTheDeadline(t *testing.T) {
	w := newWorld(t, cliqueSurge())
	w.run(cliqueSurgeRollout()[:8]...)
	m := monitorOn(w, Options{PollInterval: time.Hour}) // only the violation can wake Poll
	go func() {
		time.Sleep(20 * time.Millisecond)
		m.locked(func(*recorder, time.Time) { create(sp(0, fe, 4), "v2")(w) })
	}()
	start := time.Now()
	err := m.Poll(context.Background(), time.Minute, func() (bool, error) { return false, nil })
	var v *Violation
	if !errors.As(err, &v) || v.Invariant != UnitsWithinSurge {
		t.Fatalf("Poll = %v, want the %s violation", err, UnitsWithinSurge)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Poll returned after %s, want at the violation", d)
	}
}

func TestPoll_ConditionTimeoutAndError(t *testing.T) {
	m := monitorOn(newWorld(t, cliqueSurge()), Options{PollInterval: time.Millisecond})
	ctx := context.Background()
	n := 0
	if err := m.Poll(ctx, time.Minute, func() (bool, error) { n++; return n == 3, nil }); err != nil || n != 3 {
		t.Fatalf("Poll = %v after %d calls, want nil after 3", err, n)
	}
	if err := m.Poll(ctx, 20*time.Millisecond, func() (bool, error) { return false, nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Poll = %v, want a deadline error", err)
	}
	boom := errors.New("boom")
	if err := m.Poll(ctx, time.Minute, func() (bool, error) { return false, boom }); !errors.Is(err, boom) {
		t.Fatalf("Poll = %v, want the condition's error", err)
	}
}

func TestReport_FailsTheTestWithTheViolationAndItsTimeline(t *testing.T) {
	w := newWorld(t, cliqueSurge())
	w.run(cliqueSurgeRollout()[:8]...)
	w.run(create(sp(0, fe, 4), "v2"), create(sp(0, fe, 5), "v2"))
	m := monitorOn(w, Options{})
	tb := &fakeTB{}
	m.report(tb)
	if len(tb.errs) != 1 {
		t.Fatalf("errors = %q, want one", tb.errs)
	}
	for _, want := range []string{"invariant units-within-surge broken", "pod-created", "demo-0-frontend-4", "violation"} {
		if !strings.Contains(tb.errs[0], want) {
			t.Errorf("report lacks %q:\n%s", want, tb.errs[0])
		}
	}
	if strings.Contains(tb.errs[0], "demo-0-frontend-5") {
		t.Errorf("report runs past the first violation:\n%s", tb.errs[0])
	}
	if got := len(m.Violations()); got != 2 {
		t.Errorf("violations = %d, want 2", got)
	}
}

func TestReport_LogsTheTimelineWhenTheTestFailedOtherwise(t *testing.T) {
	w := newWorld(t, cliqueSurge())
	w.run(cliqueSurgeRollout()...)
	tb := &fakeTB{failed: true}
	monitorOn(w, Options{}).report(tb)
	if len(tb.errs) != 0 || len(tb.logs) != 1 || !strings.Contains(tb.logs[0], "pod-deleted") {
		t.Fatalf("errors %q, logs %q: want the timeline logged and no error", tb.errs, tb.logs)
	}
	clean := &fakeTB{}
	monitorOn(newWorld(t, cliqueSurge()), Options{}).report(clean)
	if len(clean.errs)+len(clean.logs) != 0 {
		t.Fatalf("a passing test got errors %q, logs %q", clean.errs, clean.logs)
	}
}

func TestTimeline_KeepsTheMostRecentEvents(t *testing.T) {
	tl := newTimeline(epoch, 3)
	for i := range 5 {
		tl.add(noLabels(epoch.Add(time.Duration(i)*time.Second), PodCreated, fmt.Sprintf("p%d", i), ""))
	}
	var names []string
	for _, e := range tl.events() {
		names = append(names, e.Name)
	}
	if got := strings.Join(names, ","); got != "p2,p3,p4" {
		t.Fatalf("events = %s, want p2,p3,p4", got)
	}
	if got := tl.tail(2); len(got) != 2 || got[1].Name != "p4" {
		t.Fatalf("tail(2) = %v", got)
	}
	var b strings.Builder
	if err := writeEvents(&b, tl.start, tl.dropped, tl.events()); err != nil {
		t.Fatal(err)
	}
	want := "(2 earlier events dropped)\n    2.000s pod-created            p2\n"
	if !strings.HasPrefix(b.String(), want) {
		t.Fatalf("written:\n%s\nwant it to start with:\n%s", b.String(), want)
	}
}

func TestTimeline_RecordsWhatTestsAssertOrdersOn(t *testing.T) {
	w := newWorld(t, cliqueSurge())
	w.run(cliqueSurgeRollout()...)
	m := monitorOn(w, Options{})
	// the order of replacements, as an e2e test would read it
	var created []string
	for _, e := range m.Timeline() {
		if e.Kind == PodCreated && e.TemplateHash == hashOf(fe, "v2") {
			created = append(created, fmt.Sprint(e.Index))
		}
	}
	if got := strings.Join(created, " "); got != "3 0 1 2" {
		t.Fatalf("updated pods created in order %q, want surge 3 then 0 1 2", got)
	}
	var b strings.Builder
	if err := m.WriteTimeline(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "pod-deleting           demo-0-frontend-3 [replica=0 clique=frontend index=3") {
		t.Fatalf("timeline:\n%s", b.String())
	}
}

// After a watch gap the relist hands over the deletions it found before the
// updates of the pods still there. The surge pod became Ready before the
// operator deleted pod 1 and made its replacement, but the relist delivers the
// deletion first: the deleted pod stops counting at once (its replacement is
// no extra unit), its deletion is judged once the relist is recorded, and
// nothing breaks. Had the surge pod not become Ready, the deletion still breaks
// the floor.
func TestMissedDeletion_IsJudgedAfterTheRelist(t *testing.T) {
	for _, surgeReady := range []bool{true, false} {
		t.Run(fmt.Sprintf("surge pod ready %v", surgeReady), func(t *testing.T) {
			w := newWorld(t, cliqueSurge())
			w.run(cliqueSurgeRollout()[:8]...) // three v1 pods ready, the v2 surge pod created
			m := monitorOn(w, Options{})
			h := m.podHandler()
			victim := w.pod(sp(0, fe, 1)).DeepCopy()
			delete(w.pods, victim.Name)
			h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "ns/" + victim.Name, Obj: victim})
			if surgeReady {
				surge := w.pod(sp(0, fe, 3)).DeepCopy()
				surge.Spec.NodeName = "node-1"
				surge.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(w.now)}}
				h.OnUpdate(nil, surge)
				// and the pod made in its place, under a name of its own
				w.run(replacementOf(sp(0, fe, 1)))
				h.OnAdd(w.pods[victim.Name+"-r"].DeepCopy(), false)
			}
			// The deletion is judged on a timer's goroutine: read the
			// recorder under the monitor's lock.
			timeline := func() string {
				m.mu.Lock()
				defer m.mu.Unlock()
				return w.timelineText()
			}
			deadline := time.Now().Add(10 * relistSettle)
			for !strings.Contains(timeline(), "missed by the watch") {
				if time.Now().After(deadline) {
					t.Fatalf("the missed deletion was not recorded:\n%s", timeline())
				}
				time.Sleep(10 * time.Millisecond) // polling with a deadline
			}
			err := m.Err()
			switch {
			case surgeReady && err != nil:
				t.Fatalf("a deletion after the surge pod was ready: %v", err)
			case !surgeReady && err == nil:
				t.Fatalf("a deletion with the surge pod not ready broke nothing:\n%s", timeline())
			}
		})
	}
}

// After a lost watch the relist may hand over the pod made in place of pod 1
// before pod 1's deletion: those events are recorded, not judged. Past the
// window the checks are back: a fifth unit breaks the surge limit.
func TestLostWatch_RelistIsRecordedNotJudged(t *testing.T) {
	w := newWorld(t, cliqueSurge())
	w.run(cliqueSurgeRollout()[:9]...) // three v1 pods ready, the v2 surge pod ready
	w.now = w.now.Add(time.Second)
	w.rec.lostWatch(w.now, errors.New("watch closed"))
	w.now = w.now.Add(5 * time.Second)
	replacement := sp(0, fe, 1)
	w.observe(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: replacement.name() + "-r", Namespace: "ns", Labels: replacement.labels("v2"), CreationTimestamp: metav1.NewTime(w.now),
	}})
	old := w.pod(sp(0, fe, 1))
	old.DeletionTimestamp = new(metav1.NewTime(w.now))
	w.observe(old)
	if len(w.rec.violations) > 0 {
		t.Fatalf("a relist's events were judged: %v\n%s", w.rec.violations[0].Error(), w.timelineText())
	}
	if !strings.Contains(w.timelineText(), string(Relisted)) {
		t.Fatalf("no %s event:\n%s", Relisted, w.timelineText())
	}
	w.run(create(sp(0, fe, 4), "v2"))
	if len(w.rec.violations) == 0 || w.rec.violations[0].Invariant != UnitsWithinSurge {
		t.Fatalf("a fifth unit after the relist broke nothing:\n%s", w.timelineText())
	}
}
