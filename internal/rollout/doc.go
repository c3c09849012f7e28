// Package rollout is Lockstep's planner: pure, deterministic functions that decide
// what every level of a PodCliqueSet must create and delete next, and what its
// status is.
//
// The planner has no client, no clock and no randomness. Time arrives as a value,
// observations arrive as plain structs, and the answer is plain data. The
// controllers, the offline simulator behind `lockstep plan` and the tests all run
// the same code.
//
// Two layers:
//
//   - PlanLevel plans one level of indexed units: the pods of a PodClique, the
//     replicas of a PodCliqueScalingGroup, or the PodCliqueSet replicas themselves
//     under ReplicaRecreate. It enforces maxSurge, maxUnavailable, partition and the
//     parent's cap on updated units.
//   - PlanSet plans the PodCliqueSet level: which PCS replicas exist, which one is
//     updating, and the Target (revision and cap) each child PodClique and
//     PodCliqueScalingGroup is told to reach. PlanTree runs PlanSet and then
//     PlanLevel for every child, which is what the simulator does.
package rollout
