package rollout

import "time"

// TrackProgress returns when a rollout last made progress, the highest counts
// seen since it started, and whether it has now gone longer than deadline
// without progress. Progress is an updated, ready or available count rising
// above the highest seen so far: a pod that flaps between ready and not ready
// gains nothing, so a rollout stuck on it still hits its deadline.
//
// While held (paused, or waiting at a gate), or when no rollout is running,
// the clock stands: lastProgressAt is kept, so a settled object's status does
// not change (and is not written again) each time it is looked at, and the
// highest counts are the current ones. restart (a new rollout, or one going
// on after a hold or after it had ended) starts the clock at now, so held time
// never counts against the deadline.
func TrackProgress(lastProgressAt time.Time, best, cur ProgressCounts, now time.Time, held, active, restart bool, deadline time.Duration) (time.Time, ProgressCounts, bool) {
	if restart || lastProgressAt.IsZero() {
		return now, cur, false
	}
	if !active || held {
		return lastProgressAt, cur, false
	}
	if cur.Updated > best.Updated || cur.Ready > best.Ready || cur.Available > best.Available {
		return now, best.highest(cur), false
	}
	return lastProgressAt, best, now.Sub(lastProgressAt) > deadline
}

// highest is the larger of each count of c and o.
func (c ProgressCounts) highest(o ProgressCounts) ProgressCounts {
	return ProgressCounts{Updated: max(c.Updated, o.Updated), Ready: max(c.Ready, o.Ready), Available: max(c.Available, o.Available)}
}
