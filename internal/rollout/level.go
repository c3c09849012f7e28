package rollout

import (
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// UpdateOrder is the order in which outdated units are picked for an update.
type UpdateOrder int

const (
	// OldestFirst picks the unit created earliest, then the lowest index. Pods of a
	// standalone PodClique use it.
	OldestFirst UpdateOrder = iota
	// LowestIndexFirst picks the lowest index. Scaling-group and PCS replicas use it.
	LowestIndexFirst
)

// ScaleInOrder is the order in which units above the desired count are removed.
type ScaleInOrder int

const (
	// OutdatedFirst removes units on an outdated revision first, then unavailable
	// ones, then the highest index. Standalone PodCliques use it.
	OutdatedFirst ScaleInOrder = iota
	// HighestIndexFirst removes the highest index first so that no hole opens below
	// the desired count. Scaling groups and PCS replicas use it.
	HighestIndexFirst
)

// DeleteReason says why the planner deletes a unit.
type DeleteReason string

const (
	// ReasonUpdate deletes an available outdated unit, spending the unavailability budget.
	ReasonUpdate DeleteReason = "update"
	// ReasonReplaceFailed deletes an outdated unit that is already unavailable; it
	// spends no budget, which keeps broken old units from deadlocking a rollout.
	ReasonReplaceFailed DeleteReason = "replace-failed"
	// ReasonScaleIn deletes a unit above the desired count.
	ReasonScaleIn DeleteReason = "scale-in"
	// ReasonSurgeCleanup deletes a surge unit that is no longer needed.
	ReasonSurgeCleanup DeleteReason = "surge-cleanup"
	// ReasonSuperseded deletes an outdated unit beside its successor at the
	// same index (surgePlacement ReplacedIndex): the successor, available or
	// the only one of the two that could be, has taken the index over. It is
	// no update of its own: the successor's creation was.
	ReasonSuperseded DeleteReason = "superseded"
)

// Unit is one observed unit of a level.
type Unit struct {
	// Index is the unit's stable ordinal (pod index, replica index).
	Index int32
	// Revision is the template revision the unit was created from.
	Revision string
	// Surge is true when the unit was created as a surge unit (kept as a label).
	Surge bool
	// Scheduled, Ready and Available describe its health; Available already
	// includes minReadySeconds (see PodAvailable).
	Scheduled, Ready, Available bool
	// Terminating units still count toward the unit total and occupy their index.
	Terminating bool
	CreatedAt   time.Time
	ReadySince  time.Time
	// Key names the unit where an index can hold two live units (a pod's
	// name); a Delete carries it back. Empty at levels that never do.
	Key string
}

// Policy is everything one level needs to decide its next actions.
type Policy struct {
	// Type is RollingUpdate (outdated units are replaced within maxSurge and
	// maxUnavailable) or OnDelete (never deleted for an update; units created for
	// any other reason use the update revision).
	Type     v1alpha1.UpdateStrategyType
	Replicas int32
	// MaxUnavailable and MaxSurge are resolved against Replicas by ResolveFenceposts.
	// Their zero values mean maxUnavailable=1, maxSurge=0, the default strategy.
	MaxUnavailable, MaxSurge intstr.IntOrString
	// UpdateRevision is the revision the level is moving to.
	UpdateRevision string
	// CurrentRevision is the revision a unit is recreated at while it may not
	// update (below Partition or with MaxUpdated reached). Empty means UpdateRevision.
	CurrentRevision string
	// MaxUpdated caps how many units in [0, Replicas) may be at UpdateRevision now;
	// nil means no cap. The parent sets it for role steps and freezes it on pause.
	MaxUpdated *int32
	// Partition keeps units with Index < Partition on their revision.
	Partition   int32
	UpdateOrder UpdateOrder
	ScaleIn     ScaleInOrder
	// ReplaceWhileTerminating (a clique's TerminationStarted): a terminating unit
	// neither counts toward Replicas+maxSurge nor holds its index, so its
	// replacement starts at once. Otherwise it does both until it is gone.
	ReplaceWhileTerminating bool
	// SurgeAtReplacedIndex (a clique's surgePlacement ReplacedIndex, with
	// ReplaceWhileTerminating): a surge unit starts at the index of an
	// outdated unit, beside it, instead of at an index >= Replicas.
	SurgeAtReplacedIndex bool
}

// Create asks for a unit to be created.
type Create struct {
	Index    int32
	Revision string
	Surge    bool
}

// Delete asks for a unit to be deleted: the unit with Key at Index (the
// index's one live unit when the level's units carry no keys).
type Delete struct {
	Index  int32
	Reason DeleteReason
	Key    string
}

// LevelStatus is the status of one level, computed from the units observed.
type LevelStatus struct {
	// Replicas counts live (not terminating) units, surge units included.
	Replicas          int32
	ScheduledReplicas int32
	ReadyReplicas     int32
	AvailableReplicas int32
	// UpdatedReplicas and UpdatedReadyReplicas count live units at the update
	// revision with Index < Replicas: the units that stay when the update ends.
	// Surge units are left out so that role steps measure real progress. Under
	// OnDelete, units above Replicas (left by an outdated-first scale-in) count.
	UpdatedReplicas      int32
	UpdatedReadyReplicas int32
	// SurgeReplicas counts live units with Index >= Replicas.
	SurgeReplicas int32
	// SelectedToUpdate are the indices this plan deletes to update them.
	SelectedToUpdate []int32
	// Complete is true when exactly [0, Replicas) is live, all at the update
	// revision. Terminating units do not hold it back: the operator has nothing
	// left to do for them, and a Deployment's rollout completes the same way.
	Complete bool
}

// LevelPlan is the answer of PlanLevel. Creates and Deletes are sorted by index.
type LevelPlan struct {
	Creates []Create
	Deletes []Delete
	Status  LevelStatus
}

// unbounded stands for "no cap" in room arithmetic.
const unbounded = int64(1) << 40

// PlanLevel decides the next creates and deletes of one level.
//
// Every rule, in the order it is applied, with the function that holds it:
//
//  1. Observe (observeLevel). A terminating unit counts toward the unit total
//     and keeps its index until it is gone, unless ReplaceWhileTerminating:
//     then it is left out altogether. An index in [0, Replicas) with two live
//     units keeps one (keepers: the updated, else the available, else the
//     older); the other is an extra. Units below Partition never count as
//     outdated.
//  2. Extras first (removeExtras): an extra goes once the unit its index keeps
//     is available (at once when the extra is unavailable itself): an outdated
//     unit beside its successor as superseded, anything else as surge-cleanup
//     (scale-in under OnDelete).
//  3. OnDelete (scaleIn): nothing is deleted for an update and there is no
//     surge; live units above Replicas go in ScaleIn order within the budget.
//  4. Failed outdated units (deletes): replace-failed, in UpdateOrder, within
//     the update room, without spending the unavailability budget.
//  5. Misplaced units (cleanupMisplaced): live units at indices >= Replicas
//     beyond the surge still wanted go as surge-cleanup or scale-in within the
//     budget; an updated surge unit on its way stays while the level has fewer
//     available units than Replicas.
//  6. Available outdated units (deletes): update, in UpdateOrder, while
//     available units stay >= Replicas-maxUnavailable and the update room
//     (the cap MaxUpdated less the vacancies it will refill) allows.
//  7. Release (release): with ReplaceWhileTerminating, what this plan deletes
//     no longer counts, so its creates may reuse the index and the surge.
//  8. Refill (creates): holes in [0, Replicas) are filled lowest index first
//     while the total stays within Replicas+maxSurge, at UpdateRevision at or
//     above Partition while the cap has room, else at CurrentRevision; a
//     refill never takes the level past the cap.
//  9. Surge (creates, surgeWanted): one unit per outdated unit still allowed
//     to update, at most maxSurge less the successors already in use, at the
//     lowest free indices >= Replicas; with SurgeAtReplacedIndex instead as
//     successors beside available outdated units, in UpdateOrder
//     (successorCreates).
//  10. Status (status): counts of live units; UpdatedReplicas counts [0,
//     Replicas) only; Complete when exactly [0, Replicas) is live at
//     UpdateRevision, terminating units aside.
//
// With the seed's replicas=3, maxSurge=1, maxUnavailable=0 this yields: create surge
// 3; when it is available delete 0; when 0 is gone refill it (a hole below Replicas
// beats a new surge index); ...; when 2 is available again delete surge 3.
func PlanLevel(p Policy, units []Unit) (LevelPlan, error) {
	fp, err := ResolveFenceposts(p.MaxSurge, p.MaxUnavailable, p.Replicas)
	if err != nil {
		return LevelPlan{}, err
	}
	if p.Type == v1alpha1.OnDeleteStrategyType {
		fp.MaxSurge = 0
	}
	if p.CurrentRevision == "" {
		p.CurrentRevision = p.UpdateRevision
	}
	v := observeLevel(p, fp, units, true)
	var plan LevelPlan
	// deletes first: a successor goes beside an outdated unit this plan keeps,
	// and what they free may be refilled at once (release)
	plan.Deletes = v.deletes()
	v.release()
	plan.Creates = v.creates()
	plan.Status = v.status(plan.Deletes)
	return plan, nil
}
