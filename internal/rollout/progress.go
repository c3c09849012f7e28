package rollout

import "time"

// TrackProgress returns when a rollout last made progress, the highest counts
// seen since it started, and whether it has now gone longer than deadline
// without progress. Progress is an updated, ready or available count rising
// above the highest seen so far: a pod that flaps between ready and not ready
// gains nothing, so a rollout stuck on it still hits its deadline. While paused,
// or when no rollout is running, the clock restarts at now and the highest
// counts are the current ones, so paused time never counts against the deadline.
func TrackProgress(lastProgressAt time.Time, best, cur ProgressCounts, now time.Time, paused, active bool, deadline time.Duration) (time.Time, ProgressCounts, bool) {
	if !active || paused || lastProgressAt.IsZero() {
		return now, cur, false
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
