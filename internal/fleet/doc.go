// Package fleet holds the fleet's pure planners. The decision planner publishes a
// Placement's choice of clusters in slices (PlacementDecisions) of at most 100
// clusters, and moves those slices from one choice to the next without a
// selected cluster ever missing from them.
//
// Like internal/rollout it has no client, no clock and no randomness:
// DesiredLayout turns the selected clusters and the group strategy into decision
// groups and slices, and PlanDecisions turns the observed slices and that layout
// into the next writes. Nothing about an update in progress is stored: the phase
// (surge, finalize, settled) is derived from the slices every time, so a
// controller that restarts at any point continues where the slices are.
//
// # RollingUpdate
//
// While some selected cluster is not yet in its final slice, the plan is a
// surge: each desired slice is written as the union of what it holds and its
// final set, never above 100 clusters. A slice that cannot take the whole union
// gives up clusters it is losing anyway: first those leaving the placement, then
// those already housed in their final slice. Writes that give up no selected
// cluster come first; each other write comes after the writes that house the
// clusters it gives up. Only when slices wait on each other in a cycle does one
// of them copy what it gives up into spill slices (new slices with its group
// labels) just before its write. Once a read shows every selected cluster in
// its final slice, the plan is a finalize: each slice is trimmed to its final
// set and the spill and obsolete slices are deleted. Every trim is safe then, in any order, because each
// cluster it removes is either leaving the placement or sits in its final slice,
// which keeps it.
//
// # The contract with the controller
//
// The guarantee — a cluster selected before and after an update is in at least
// one slice at every state a watcher can observe, and no slice ever holds more
// than 100 clusters — holds when the controller:
//
//  1. plans from a read of all the placement's slices that reflects every write
//     it has made so far (a live list from the apiserver, or a cache known to
//     have caught up with its own writes): the safety of removing a cluster
//     from one slice rests on what the other slices hold;
//  2. applies the writes one at a time, in the order returned, each finished
//     before the next starts (a Create is a create followed by a status write,
//     the object being empty in between, which removes nothing);
//  3. makes each update and delete conditional on the resourceVersion it read,
//     and stops at the first failed write, then reads and plans again.
//
// Any prefix of a plan is safe: a crash, a conflict or a changed placement
// between two writes leaves slices from which the next plan carries on. The
// controller may apply a whole plan in one round; it need not re-read between
// the writes of one plan. A surge and a finalize are never in the same plan, so
// there is always a read between them, and the watcher sees a state where every
// cluster is in its final slice (and DecisionsSettled is False, reason Surging)
// before any slice is trimmed.
//
// Under a fixed choice of clusters an update takes at most two plans applied
// in full (a surge, then a finalize; a surge that needs no trim settles at
// once), and a third read finds nothing to do.
//
// # All
//
// Every slice is written to its final set directly, in slice order, then the
// others are deleted. A cluster moving between slices can be missing from all of
// them between two writes; that is the documented cost of All.
package fleet
