package rollout

import "slices"

// Played is units after a controller carried out plan in a simulation: each
// deleted unit terminates (no longer ready or available) and each created
// unit exists, scheduled but not yet ready. The simulated member clusters of
// the fleet planner and of `lockstep plan` carry plans out through it, so they
// play a plan the same way.
func Played(units []Unit, plan LevelPlan) []Unit {
	for _, d := range plan.Deletes {
		for i := range units {
			if units[i].Index == d.Index && !units[i].Terminating {
				units[i].Terminating, units[i].Available, units[i].Ready = true, false, false
			}
		}
	}
	for _, c := range plan.Creates {
		units = append(units, Unit{Index: c.Index, Revision: c.Revision, Surge: c.Surge, Scheduled: true})
	}
	return units
}

// Settled is units once time has passed in a simulation: the terminating ones
// are gone and every other one is ready and available.
func Settled(units []Unit) []Unit {
	units = slices.DeleteFunc(units, func(u Unit) bool { return u.Terminating })
	for i := range units {
		units[i].Ready, units[i].Available = true, true
	}
	return units
}
