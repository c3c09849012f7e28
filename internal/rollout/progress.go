package rollout

import "time"

// TrackProgress returns when a rollout last made progress and whether it has now
// gone longer than deadline without any. Progress is any change in the updated,
// ready or available counts. While paused, or when no rollout is running, the clock
// restarts at now, so paused time never counts against the deadline.
func TrackProgress(lastProgressAt time.Time, prev, cur ProgressCounts, now time.Time, paused, active bool, deadline time.Duration) (time.Time, bool) {
	if !active || paused || lastProgressAt.IsZero() || prev != cur {
		return now, false
	}
	return lastProgressAt, now.Sub(lastProgressAt) > deadline
}
