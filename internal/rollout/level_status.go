package rollout

// The status of a level, unit availability, and the log fields of a plan.

import (
	"fmt"
	"time"
)

func (v *levelView) status(deletes []Delete) LevelStatus {
	s := LevelStatus{
		Replicas:             v.live,
		ScheduledReplicas:    v.scheduled,
		ReadyReplicas:        v.ready,
		AvailableReplicas:    v.available,
		UpdatedReplicas:      v.updatedRegular,
		UpdatedReadyReplicas: v.updatedReadyRegular,
		SurgeReplicas:        v.liveMisplaced(),
		Complete:             v.updatedRegular == v.p.Replicas && v.live == v.p.Replicas,
	}
	if len(deletes) > 0 {
		s.SelectedToUpdate = make([]int32, 0, len(deletes))
	}
	for _, d := range deletes {
		if d.Reason == ReasonUpdate || d.Reason == ReasonReplaceFailed || d.Reason == ReasonSuperseded {
			s.SelectedToUpdate = append(s.SelectedToUpdate, d.Index)
		}
	}
	return s
}

// PodAvailable reports whether a pod counts as available: ready for at least
// minReadySeconds at now, as Deployment defines it.
func PodAvailable(ready bool, readySince time.Time, minReadySeconds int32, now time.Time) bool {
	if !ready {
		return false
	}
	if minReadySeconds <= 0 {
		return true
	}
	return !readySince.IsZero() && !now.Before(readySince.Add(time.Duration(minReadySeconds)*time.Second))
}

// Inputs are what a level plan was made from, as key/value pairs for a debug
// log line: the policy's sizes and revisions, and each unit as
// index@revision with its state (s scheduled, r ready, a available, t
// terminating, + surge). With them a surprising plan can be replayed.
func Inputs(p Policy, units []Unit) []any {
	maxUpdated := "none"
	if p.MaxUpdated != nil {
		maxUpdated = fmt.Sprint(*p.MaxUpdated)
	}
	policy := fmt.Sprintf("%s replicas=%d maxSurge=%s maxUnavailable=%s maxUpdated=%s partition=%d update=%s current=%s replaceWhileTerminating=%t surgeAtReplacedIndex=%t",
		p.Type, p.Replicas, p.MaxSurge.String(), p.MaxUnavailable.String(), maxUpdated, p.Partition, p.UpdateRevision, p.CurrentRevision,
		p.ReplaceWhileTerminating, p.SurgeAtReplacedIndex)
	us := make([]string, 0, len(units))
	for _, u := range units {
		state := ""
		for _, f := range []struct {
			on bool
			c  string
		}{{u.Scheduled, "s"}, {u.Ready, "r"}, {u.Available, "a"}, {u.Terminating, "t"}, {u.Surge, "+"}} {
			if f.on {
				state += f.c
			}
		}
		us = append(us, fmt.Sprintf("%d@%s:%s", u.Index, u.Revision, state))
	}
	return []any{"policy", policy, "units", us}
}

// Summary is the plan as key/value pairs for a log line: what it creates and
// deletes (index and reason) and the counts it reports.
func (p LevelPlan) Summary() []any {
	creates := make([]string, 0, len(p.Creates))
	for _, c := range p.Creates {
		creates = append(creates, fmt.Sprintf("%d@%s", c.Index, c.Revision))
	}
	deletes := make([]string, 0, len(p.Deletes))
	for _, d := range p.Deletes {
		deletes = append(deletes, fmt.Sprintf("%d:%s", d.Index, d.Reason))
	}
	s := p.Status
	return []any{"creates", creates, "deletes", deletes, "replicas", s.Replicas, "updated", s.UpdatedReplicas,
		"available", s.AvailableReplicas, "complete", s.Complete}
}
