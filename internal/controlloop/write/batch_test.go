package write

import (
	"fmt"
	"testing"
	"time"
)

// A progress-only change waits out StatusBatch after the last write; any
// other change, the first write and a nil Batch wait for nothing; entries
// whose wait is over are swept.
func TestBatch_HoldsBackProgressOnlyChanges(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var b Batch
	if w := b.Wait("pcs/a", true, t0); w != 0 {
		t.Fatalf("first write waits %v", w)
	}
	b.Wrote("pcs/a", t0)
	steps := []struct {
		name         string
		progressOnly bool
		at           time.Duration
		want         time.Duration
	}{
		{"progress only, 300ms after", true, 300 * time.Millisecond, 700 * time.Millisecond},
		{"anything else, 300ms after", false, 300 * time.Millisecond, 0},
		{"progress only, a second after", true, time.Second, 0},
	}
	for _, s := range steps {
		if w := b.Wait("pcs/a", s.progressOnly, t0.Add(s.at)); w != s.want {
			t.Errorf("%s: wait %v, want %v", s.name, w, s.want)
		}
	}
	if w := b.Wait("pcs/b", true, t0.Add(300*time.Millisecond)); w != 0 {
		t.Errorf("another object waits %v", w)
	}
	for i := range sweepEvery {
		b.Wrote(fmt.Sprintf("pcs/x%d", i), t0.Add(2*time.Second))
	}
	if _, ok := b.last.Load("pcs/a"); ok {
		t.Errorf("pcs/a, written 2s before the sweep, was not swept")
	}
	if _, ok := b.last.Load("pcs/x0"); !ok {
		t.Errorf("pcs/x0, written at the sweep, was swept")
	}
	var none *Batch
	none.Wrote("pcs/a", t0)
	if w := none.Wait("pcs/a", true, t0); w != 0 {
		t.Errorf("a nil Batch waits %v", w)
	}
}
