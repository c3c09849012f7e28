package write

import (
	"sync"
	"sync/atomic"
	"time"
)

// StatusBatch is how long a status change that only moves a rollout's
// progress may wait to be written: counts of ready, available and updated
// units and the messages that name them. A wide rollout step changes those on
// every pod event; the next write carries them. Everything else a user or a
// planner reads back (replicas, revisions, the status and reason of a
// condition, which units are being updated) is written at once, and so is a
// count a parent waits for before it says it is done (rollout.Report,
// rollout.ChildProgressOnly).
const StatusBatch = time.Second

// Batch remembers when each object's status was last written, to hold back
// progress-only changes for StatusBatch after it. The zero Batch is ready to
// use; a nil *Batch holds nothing back.
type Batch struct {
	last   sync.Map // key → time.Time
	writes atomic.Int64
}

// sweepEvery is how many writes go by between sweeps of the entries whose
// wait is over (those of objects gone, among them).
const sweepEvery = 1024

// Wait is how long a change of key's status may still wait before it is
// written (0: write it now). Only a progress-only change waits, and only
// after a write this process made.
func (b *Batch) Wait(key string, progressOnly bool, now time.Time) time.Duration {
	if b == nil || !progressOnly {
		return 0
	}
	v, ok := b.last.Load(key)
	if !ok {
		return 0
	}
	return max(0, v.(time.Time).Add(StatusBatch).Sub(now))
}

// Wrote notes a status write of key at now.
func (b *Batch) Wrote(key string, now time.Time) {
	if b == nil {
		return
	}
	b.last.Store(key, now)
	if b.writes.Add(1)%sweepEvery == 0 {
		b.last.Range(func(k, v any) bool {
			if !now.Before(v.(time.Time).Add(StatusBatch)) {
				b.last.Delete(k)
			}
			return true
		})
	}
}
