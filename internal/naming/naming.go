// Package naming is the one place that builds the names of the objects Lockstep
// creates. Indices go into names only to make them readable and stable; code reads
// indices back from labels, never by parsing a name.
package naming

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
)

// MaxRevisionHashLen is the longest hash a revision name carries.
const MaxRevisionHashLen = 10

// PodClique is the name of a standalone clique of one PodCliqueSet replica.
func PodClique(pcs string, replica int, clique string) string {
	return join(pcs, strconv.Itoa(replica), clique)
}

// ScalingGroup is the name of a scaling group of one PodCliqueSet replica.
func ScalingGroup(pcs string, replica int, group string) string {
	return join(pcs, strconv.Itoa(replica), group)
}

// GroupPodClique is the name of a clique of one scaling-group replica.
func GroupPodClique(scalingGroup string, groupReplica int, clique string) string {
	return join(scalingGroup, strconv.Itoa(groupReplica), clique)
}

// Pod is the name and hostname of the pod with the given index in a PodClique.
// Names are stable: a replacement reuses its index and so its name, except while
// other pods of the index are still there (see ReplacementPod); the hostname stays.
func Pod(podClique string, index int) string {
	return join(podClique, strconv.Itoa(index))
}

// ReplacementPod is the name of a new pod at index while other pods of that
// index are still there (TerminationStarted: a predecessor terminating, or an
// outdated pod a surge pod starts beside): the first of the index's own name
// and one name per pod of the index (derived from its UID, so every pass picks
// the same one) that no existing pod holds. With n pods holding names there are
// n+1 candidates, so one is always free. taken says whether a name is in use.
func ReplacementPod(podClique string, index int, uidsAtIndex []string, taken func(string) bool) string {
	base := Pod(podClique, index)
	if !taken(base) {
		return base
	}
	uids := slices.Clone(uidsAtIndex)
	slices.Sort(uids)
	for _, uid := range uids {
		sum := sha256.Sum256([]byte(uid))
		if name := join(base, hex.EncodeToString(sum[:])[:5]); !taken(name) {
			return name
		}
	}
	return base // every candidate taken: the create fails and is tried again
}

// HeadlessService is the Service that gives the pods of one PodCliqueSet replica
// their DNS names; pods use it as their subdomain.
func HeadlessService(pcs string, replica int) string {
	return join(pcs, strconv.Itoa(replica))
}

// BaseGang is the gang of one PodCliqueSet replica: its standalone cliques and the
// scaling-group replicas below each group's minAvailable.
func BaseGang(pcs string, replica int) string {
	return join(pcs, strconv.Itoa(replica))
}

// ScaledGang is the gang of one scaling-group replica at or above minAvailable.
func ScaledGang(scalingGroup string, groupReplica int) string {
	return join(scalingGroup, strconv.Itoa(groupReplica))
}

// Revision is the name of the ControllerRevision of a PodCliqueSet template.
func Revision(pcs, hash string) string {
	return join(pcs, hash)
}

func join(parts ...string) string {
	n := len(parts) - 1
	for _, p := range parts {
		n += len(p)
	}
	b := make([]byte, 0, n)
	for i, p := range parts {
		if i > 0 {
			b = append(b, '-')
		}
		b = append(b, p...)
	}
	return string(b)
}
