// Package revision is the one place that decides when a PodCliqueSet spec is a new
// revision. Each role (standalone clique, scaling group, clique inside a group)
// gets a template hash; the PodCliqueSet revision is a hash of those.
//
// What counts: a clique's pod template; for a scaling group, the pod templates,
// replicas and minAvailable of its cliques (the shape of one group replica, as a
// LeaderWorkerSet's size is part of its template). What does not: replicas of the
// PodCliqueSet, of a standalone clique or of a group (those scale), minAvailable of
// a standalone clique or group, update strategies, and anything outside
// spec.template. Hashes are taken over the JSON the API stores, in which unset
// fields are omitted, so an operator upgrade that learns new optional fields does
// not change them and never rolls pods.
//
// The canonical form is CanonicalFormVersion. The version is not part of the
// hashed bytes (adding it would have changed every hash already running), so the
// rule is instead: what is hashed is a pod template as its Go type marshals it,
// the groupMember and roleHash shapes below, and nothing else; Default() must
// never write into what is hashed; a field that starts to count must hash to the
// same bytes when it is unset or at its default (as groupMember.MinAvailable
// does, through EffectiveMinAvailable). testdata/golden-revisions.json pins the
// revisions of every example: a change there, including one brought by a
// k8s.io/api upgrade that changes how a pod template marshals, rolls every
// running PodCliqueSet like it when the operator is upgraded.
package revision

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/naming"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// CanonicalFormVersion names the canonical form hashes are taken over (see the
// package doc). It is recorded next to the golden revisions, never hashed.
const CanonicalFormVersion = 1

// ForSpec returns the revision of a PodCliqueSet spec: its name (as used for the
// ControllerRevision and the lockstep.dev/podcliqueset-revision label) and the
// template hash of every role.
func ForSpec(pcsName string, spec *v1alpha1.PodCliqueSetSpec) (rollout.SetRevision, error) {
	t := &spec.Template
	var roles []rollout.RoleRevision
	for i := range t.Cliques {
		c := &t.Cliques[i]
		h, err := CliqueHash(c)
		if err != nil {
			return rollout.SetRevision{}, fmt.Errorf("hashing clique %s: %w", c.Name, err)
		}
		roles = append(roles, rollout.RoleRevision{Role: c.Name, Revision: h})
	}
	for i := range t.PodCliqueScalingGroups {
		g := &t.PodCliqueScalingGroups[i]
		h, err := GroupHash(t, g)
		if err != nil {
			return rollout.SetRevision{}, fmt.Errorf("hashing scaling group %s: %w", g.Name, err)
		}
		roles = append(roles, rollout.RoleRevision{Role: g.Name, Revision: h})
	}
	sort.Slice(roles, func(i, j int) bool { return roles[i].Role < roles[j].Role })
	keys := make([]roleHash, len(roles))
	for i, r := range roles {
		keys[i] = roleHash(r)
	}
	setHash, err := hash(keys)
	if err != nil {
		return rollout.SetRevision{}, err
	}
	return rollout.SetRevision{Name: naming.Revision(pcsName, setHash), Roles: roles}, nil
}

// PodTemplateHash is the hash of the pods one clique makes: its pod template,
// and its peerDNS when that is None (a pod's subdomain is part of the pod and
// cannot change). Replica and the empty default hash as the template alone, so
// revisions made before peerDNS existed keep their hashes. Pods carry it in the
// lockstep.dev/template-hash label.
func PodTemplateHash(t *corev1.PodTemplateSpec, dns v1alpha1.PeerDNS) (string, error) {
	if dns.Resolvable() {
		return hash(t)
	}
	return hash(struct {
		Template *corev1.PodTemplateSpec `json:"template"`
		PeerDNS  v1alpha1.PeerDNS        `json:"peerDNS"`
	}{t, dns})
}

// PodCliqueHash is PodTemplateHash of a PodClique's template: the hash its
// new pods carry.
func PodCliqueHash(pclq *v1alpha1.PodClique) (string, error) {
	return PodTemplateHash(&pclq.Spec.Template, pclq.Spec.PeerDNS)
}

// CliqueHash is PodTemplateHash of a clique template.
func CliqueHash(c *v1alpha1.PodCliqueTemplateSpec) (string, error) {
	return PodTemplateHash(&c.Template, c.PeerDNS)
}

// roleHash is what the set revision hashes of one role. It is its own type, with
// frozen JSON names, so that a field added to rollout.RoleRevision does not change
// every set revision.
type roleHash struct {
	Role     string `json:"Role"`
	Revision string `json:"Revision"`
}

// groupMember is what of a member clique shapes a group replica.
type groupMember struct {
	Name         string                 `json:"name"`
	Replicas     int32                  `json:"replicas"`
	MinAvailable int32                  `json:"minAvailable"`
	Template     corev1.PodTemplateSpec `json:"template"`
	// PeerDNS is set only when None, so that groups hash as they did before
	// the field existed (see PodTemplateHash).
	PeerDNS v1alpha1.PeerDNS `json:"peerDNS,omitempty"`
}

// GroupHash is the hash of one scaling group's replica shape.
func GroupHash(t *v1alpha1.PodCliqueSetTemplateSpec, g *v1alpha1.PodCliqueScalingGroupConfig) (string, error) {
	members := make([]groupMember, 0, len(g.CliqueNames))
	for _, n := range g.CliqueNames {
		c := t.Clique(n)
		if c == nil {
			return "", fmt.Errorf("scaling group %s names unknown clique %s", g.Name, n)
		}
		m := groupMember{Name: n, Replicas: c.Replicas, MinAvailable: c.EffectiveMinAvailable(), Template: c.Template}
		if !c.PeerDNS.Resolvable() {
			m.PeerDNS = c.PeerDNS
		}
		members = append(members, m)
	}
	sort.Slice(members, func(i, j int) bool { return members[i].Name < members[j].Name })
	return hash(members)
}

// Of is the revision hash of any value, taken over its JSON form; the fleet
// hashes a member template's pod template with it.
func Of(v any) (string, error) {
	return hash(v)
}

// hash is a short, label-safe digest of v's JSON form.
func hash(v any) (string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return encode(sum[:]), nil
}

// encode renders bytes in an alphabet without vowels, so hashes never spell words,
// truncated to naming.MaxRevisionHashLen characters.
func encode(b []byte) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	out := make([]byte, naming.MaxRevisionHashLen)
	for i := range out {
		out[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(out)
}

// GroupHashOf is the hash of a scaling group's member cliques as its spec holds
// them: the same hash GroupHash gives the group in the PodCliqueSet revision.
func GroupHashOf(cliques []v1alpha1.PodCliqueTemplateSpec) (string, error) {
	t := &v1alpha1.PodCliqueSetTemplateSpec{Cliques: cliques}
	cfg := &v1alpha1.PodCliqueScalingGroupConfig{}
	for _, c := range cliques {
		cfg.CliqueNames = append(cfg.CliqueNames, c.Name)
	}
	return GroupHash(t, cfg)
}
