// Package validation holds the rules a PodCliqueSet and its children must
// follow. The admission webhooks answer with them, and the PodCliqueSet
// controller checks a spec with them before it acts, so an object that got
// past admission is reported, never acted on; neither imports the other.
package validation

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	k8svalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/lockstep-dev/lockstep/api/limit"
	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/analysis"
	"github.com/lockstep-dev/lockstep/internal/gate"
	"github.com/lockstep-dev/lockstep/internal/naming"
)

// minIndexDigits is the room every generated name leaves for each index, so that
// scaling up to 999 replicas at any level never produces a name that is too long.
const minIndexDigits = 3

// ValidatePodCliqueSet checks a defaulted PodCliqueSet. It returns every error at
// once, each with its field path, and warnings for valid but risky settings.
func ValidatePodCliqueSet(pcs *v1alpha1.PodCliqueSet) (field.ErrorList, []string) {
	v := &pcsValidator{pcs: pcs}
	v.validateName()
	v.validateSpec()
	return v.errs, v.warnings
}

// ValidatePodCliqueSetUpdate checks an update: the new object must be valid on its
// own and keep the composition of the old one.
func ValidatePodCliqueSetUpdate(oldPCS, newPCS *v1alpha1.PodCliqueSet) (field.ErrorList, []string) {
	errs, warnings := ValidatePodCliqueSet(newPCS)
	errs = append(errs, validateComposition(&oldPCS.Spec.Template, &newPCS.Spec.Template)...)
	return errs, warnings
}

// collector gathers every error and warning of one object, so that a user sees
// them all in one answer.
type collector struct {
	errs     field.ErrorList
	warnings []string
}

type pcsValidator struct {
	collector
	pcs *v1alpha1.PodCliqueSet
}

func (v *collector) add(err *field.Error) { v.errs = append(v.errs, err) }

func (v *collector) warn(format string, args ...any) {
	v.warnings = append(v.warnings, fmt.Sprintf(format, args...))
}

// validateName keeps the PodCliqueSet name usable in the Services, revision names
// and labels derived from it.
func (v *pcsValidator) validateName() {
	name := v.pcs.Name
	if name == "" {
		return // generateName: the apiserver checks the final name.
	}
	p := field.NewPath("metadata", "name")
	for _, msg := range k8svalidation.IsDNS1035Label(name) {
		v.add(field.Invalid(p, name, "must be usable as a Service name (a DNS-1035 label): "+msg))
	}
	if limit := k8svalidation.DNS1035LabelMaxLength - 1 - naming.MaxRevisionHashLen; len(name) > limit {
		v.add(field.TooLong(p, name, limit))
	}
}

func (v *pcsValidator) validateSpec() {
	s := &v.pcs.Spec
	sp := field.NewPath("spec")
	replicas := int32(0)
	if s.Replicas != nil {
		replicas = *s.Replicas
		if replicas < 0 {
			v.add(field.Invalid(sp.Child("replicas"), replicas, "must be greater than or equal to 0"))
		}
	}
	if s.MinReadySeconds < 0 {
		v.add(field.Invalid(sp.Child("minReadySeconds"), s.MinReadySeconds, "must be greater than or equal to 0"))
	}
	if d := s.ProgressDeadlineSeconds; d != nil {
		if *d < 1 {
			v.add(field.Invalid(sp.Child("progressDeadlineSeconds"), *d, "must be at least 1"))
		} else if *d <= s.MinReadySeconds {
			v.add(field.Invalid(sp.Child("progressDeadlineSeconds"), *d, "must be greater than minReadySeconds, or no rollout could ever make progress in time"))
		}
	}
	if l := s.RevisionHistoryLimit; l != nil && *l < 0 {
		v.add(field.Invalid(sp.Child("revisionHistoryLimit"), *l, "must be greater than or equal to 0"))
	}
	if s.SurgePlacement == v1alpha1.ReplacedIndex && s.PodReplacementPolicy == v1alpha1.TerminationComplete {
		v.add(field.Invalid(sp.Child("surgePlacement"), s.SurgePlacement,
			"needs podReplacementPolicy TerminationStarted: a surge pod runs beside the pod it replaces, two live pods at one index"))
	}
	v.validateReplicaReplacementPolicy(sp.Child("replicaReplacementPolicy"))
	roles := v.validateTemplate(sp.Child("template"))
	v.validateUpdateStrategy(sp.Child("updateStrategy"), replicas, roles)
	v.validateGeneratedNames(replicas)
}

// role is an updatable unit of a PodCliqueSet replica: a standalone clique or a
// scaling group, with its number of units.
type role struct {
	replicas int32
	group    bool
}

// validateTemplate checks cliques and scaling groups and returns the roles they
// define, for the role steps.
func (v *pcsValidator) validateTemplate(tp *field.Path) map[string]role {
	t := &v.pcs.Spec.Template
	typ := v.pcs.Spec.UpdateStrategy.Type
	roles := map[string]role{}
	names := sets.New[string]()
	cp := tp.Child("cliques")
	if len(t.Cliques) == 0 {
		v.add(field.Required(cp, "at least one clique is needed"))
	}
	for i := range t.Cliques {
		c := &t.Cliques[i]
		p := cp.Index(i)
		v.validateRoleName(p.Child("name"), c.Name, names)
		v.validateReplicaCounts(p, c.Replicas, c.MinAvailable)
		v.validatePodTemplate(p.Child("template"), &c.Template)
		v.validatePeerDNS(p.Child("peerDNS"), c.PeerDNS)
		if c.UpdateStrategy != nil {
			usp := p.Child("updateStrategy")
			switch {
			case t.ScalingGroupOf(c.Name) != nil:
				v.add(field.Forbidden(usp, fmt.Sprintf("clique %q is in scaling group %q, which is updated as a whole: set updateStrategy on the scaling group instead", c.Name, t.ScalingGroupOf(c.Name).Name)))
			case !typ.IsRollingUpdate():
				v.add(field.Forbidden(usp, fmt.Sprintf("not allowed with spec.updateStrategy.type %s: %s", typ, componentStrategyReason(typ))))
			default:
				v.validateComponentStrategy(usp, c.UpdateStrategy, c.Replicas)
			}
		}
	}
	gp := tp.Child("podCliqueScalingGroups")
	inGroup := map[string]string{}
	for i := range t.PodCliqueScalingGroups {
		g := &t.PodCliqueScalingGroups[i]
		p := gp.Index(i)
		v.validateRoleName(p.Child("name"), g.Name, names)
		v.validateReplicaCounts(p, g.Replicas, g.MinAvailable)
		np := p.Child("cliqueNames")
		if len(g.CliqueNames) == 0 {
			v.add(field.Required(np, "a scaling group needs at least one clique"))
		}
		seen := sets.New[string]()
		for j, n := range g.CliqueNames {
			switch {
			case seen.Has(n):
				v.add(field.Duplicate(np.Index(j), n))
			case t.Clique(n) == nil:
				v.add(field.Invalid(np.Index(j), n, fmt.Sprintf("no clique named %q in spec.template.cliques", n)))
			case inGroup[n] != "" && inGroup[n] != g.Name:
				v.add(field.Invalid(np.Index(j), n, fmt.Sprintf("clique %q is already in scaling group %q; a clique belongs to at most one group", n, inGroup[n])))
			default:
				inGroup[n] = g.Name
			}
			seen.Insert(n)
		}
		if g.UpdateStrategy != nil {
			usp := p.Child("updateStrategy")
			if !typ.IsRollingUpdate() {
				v.add(field.Forbidden(usp, fmt.Sprintf("not allowed with spec.updateStrategy.type %s: %s", typ, componentStrategyReason(typ))))
			} else {
				v.validateComponentStrategy(usp, g.UpdateStrategy, g.Replicas)
			}
		}
		roles[g.Name] = role{replicas: g.Replicas, group: true}
	}
	for i := range t.Cliques {
		if _, grouped := inGroup[t.Cliques[i].Name]; !grouped {
			roles[t.Cliques[i].Name] = role{replicas: t.Cliques[i].Replicas}
		}
	}
	return roles
}

func componentStrategyReason(typ v1alpha1.UpdateStrategyType) string {
	if typ == v1alpha1.ReplicaRecreateStrategyType {
		return "whole PodCliqueSet replicas are recreated, so per-clique and per-group limits would have no effect"
	}
	return "nothing is deleted for an update, so there is nothing to limit"
}

func (v *collector) validateRoleName(p *field.Path, name string, seen sets.Set[string]) {
	if name == "" {
		v.add(field.Required(p, "a name is needed"))
		return
	}
	for _, msg := range k8svalidation.IsDNS1123Label(name) {
		v.add(field.Invalid(p, name, msg))
	}
	if seen.Has(name) {
		v.add(field.Invalid(p, name, "must be unique among the cliques and scaling groups of the PodCliqueSet"))
	}
	seen.Insert(name)
}

func (v *collector) validateReplicaCounts(p *field.Path, replicas int32, minAvailable *int32) {
	if replicas < 0 {
		v.add(field.Invalid(p.Child("replicas"), replicas, "must be greater than or equal to 0"))
	}
	if minAvailable == nil {
		return
	}
	if *minAvailable < 1 {
		v.add(field.Invalid(p.Child("minAvailable"), *minAvailable, "must be at least 1"))
	} else if *minAvailable > replicas {
		v.add(field.Invalid(p.Child("minAvailable"), *minAvailable, fmt.Sprintf("must not exceed replicas (%d)", replicas)))
	}
}

func (v *collector) validatePodTemplate(p *field.Path, t *corev1.PodTemplateSpec) {
	cp := p.Child("spec", "containers")
	if len(t.Spec.Containers) == 0 {
		v.add(field.Required(cp, "a pod template needs at least one container"))
	}
	names := sets.New[string]()
	for i, c := range t.Spec.Containers {
		switch {
		case c.Name == "":
			v.add(field.Required(cp.Index(i).Child("name"), "every container needs a name"))
		case names.Has(c.Name):
			v.add(field.Duplicate(cp.Index(i).Child("name"), c.Name))
		}
		names.Insert(c.Name)
		if c.Image == "" {
			v.add(field.Required(cp.Index(i).Child("image"), "every container needs an image"))
		}
	}
	if t.Spec.Hostname != "" || t.Spec.Subdomain != "" {
		v.warn("%s: hostname and subdomain are set by Lockstep (<podclique>-<index> under the replica's headless Service, no subdomain with peerDNS None); the template's values are ignored", p.Child("spec"))
	}
}

// validatePeerDNS checks a clique's peerDNS (empty is the default, Replica).
func (v *collector) validatePeerDNS(p *field.Path, d v1alpha1.PeerDNS) {
	switch d {
	case "", v1alpha1.PeerDNSReplica, v1alpha1.PeerDNSNone:
	default:
		v.add(field.NotSupported(p, d, []string{string(v1alpha1.PeerDNSReplica), string(v1alpha1.PeerDNSNone)}))
	}
}

// validateLimits checks a maxUnavailable/maxSurge pair against the replicas of
// its level, by the rule both halves share.
func (v *collector) validateLimits(p *field.Path, maxUnavailable, maxSurge *intstr.IntOrString, replicas int32) {
	v.errs = append(v.errs, limit.Validate(p, maxUnavailable, maxSurge, replicas)...)
}

func (v *collector) validateComponentStrategy(p *field.Path, s *v1alpha1.ComponentUpdateStrategy, replicas int32) {
	v.validateLimits(p, s.MaxUnavailable, s.MaxSurge, replicas)
}

func (v *pcsValidator) validateUpdateStrategy(p *field.Path, replicas int32, roles map[string]role) {
	us := &v.pcs.Spec.UpdateStrategy
	typ := us.Type
	switch typ {
	case "", v1alpha1.RollingUpdateStrategyType, v1alpha1.RollingRecreateStrategyType,
		v1alpha1.ReplicaRecreateStrategyType, v1alpha1.OnDeleteStrategyType:
	default:
		v.add(field.NotSupported(p.Child("type"), typ, []string{
			string(v1alpha1.RollingUpdateStrategyType), string(v1alpha1.RollingRecreateStrategyType),
			string(v1alpha1.ReplicaRecreateStrategyType), string(v1alpha1.OnDeleteStrategyType)}))
		return
	}
	if ru := us.RollingUpdate; ru != nil {
		rp := p.Child("rollingUpdate")
		switch typ {
		case v1alpha1.ReplicaRecreateStrategyType:
			v.validateLimits(rp, ru.MaxUnavailable, ru.MaxSurge, replicas)
			v.warnReplicaRecreate(rp, ru, replicas)
		case v1alpha1.OnDeleteStrategyType:
			v.add(field.Forbidden(rp, "not allowed with type OnDelete: nothing is deleted for an update, so there is nothing to limit or partition"))
		default:
			if ru.MaxUnavailable != nil {
				v.add(field.Forbidden(rp.Child("maxUnavailable"), "only allowed with type ReplicaRecreate: with RollingUpdate PodCliqueSet replicas update one at a time; set maxUnavailable on cliques or scaling groups instead"))
			}
			if ru.MaxSurge != nil {
				v.add(field.Forbidden(rp.Child("maxSurge"), "only allowed with type ReplicaRecreate: with RollingUpdate PodCliqueSet replicas update one at a time; set maxSurge on cliques or scaling groups instead"))
			}
		}
		if part := ru.Partition; part != nil && typ != v1alpha1.OnDeleteStrategyType {
			if *part < 0 {
				v.add(field.Invalid(rp.Child("partition"), *part, "must be greater than or equal to 0"))
			} else if *part >= replicas && replicas > 0 {
				v.warn("%s is %d and spec.replicas is %d: no replica will be updated until the partition is lowered", rp.Child("partition"), *part, replicas)
			}
		}
	}
	if us.RoleUpgrade != nil {
		rp := p.Child("roleUpgrade")
		if !typ.IsRollingUpdate() {
			v.add(field.Forbidden(rp, fmt.Sprintf("only allowed with type RollingUpdate: with %s there are no per-role updates to order", typ)))
		} else {
			v.validateRoleSteps(rp.Child("steps"), us.RoleUpgrade.Steps, roles)
		}
	}
	if us.Gate != nil {
		gp := p.Child("gate")
		if typ == v1alpha1.OnDeleteStrategyType {
			v.add(field.Forbidden(gp, "not allowed with type OnDelete: nothing is updated in order, so there is no checkpoint to hold"))
		}
		v.validateGate(gp, us.Gate)
	}
	v.warnUnavailableSingleReplica(replicas)
}

// maxSoakSeconds is a week: a longer soak is a pause, and says so better.
const maxSoakSeconds = 7 * 24 * 3600

// ValidateGate checks a gate at p wherever it sits (a PodCliqueSet's, or a
// fleet stage's): its errors, and warnings for what it does not do.
func ValidateGate(p *field.Path, g *v1alpha1.Gate) (field.ErrorList, []string) {
	v := &pcsValidator{}
	v.validateGate(p, g)
	return v.errs, v.warnings
}

// validateGate checks a gate's soak; a gate with no check at all is allowed
// but does nothing, so it is warned about.
func (v *pcsValidator) validateGate(p *field.Path, g *v1alpha1.Gate) {
	if g.SoakSeconds < 0 || g.SoakSeconds > maxSoakSeconds {
		v.add(field.Invalid(p.Child("soakSeconds"), g.SoakSeconds, fmt.Sprintf("must be between 0 and %d (a week); hold longer with spec.paused", maxSoakSeconds)))
	}
	switch g.OnFailure {
	case "", v1alpha1.GateFailurePause, v1alpha1.GateFailureRollback:
	default:
		v.add(field.NotSupported(p.Child("onFailure"), g.OnFailure, []string{string(v1alpha1.GateFailurePause), string(v1alpha1.GateFailureRollback)}))
	}
	if a := g.Analysis; a != nil {
		ap := p.Child("analysis")
		if a.IntervalSeconds < 0 || a.IntervalSeconds > 3600 {
			v.add(field.Invalid(ap.Child("intervalSeconds"), a.IntervalSeconds, "must be between 1 and 3600"))
		}
		switch {
		case (a.Prometheus == nil) == (a.Webhook == nil):
			v.add(field.Invalid(ap, "", "set exactly one of prometheus and webhook"))
		case a.Prometheus != nil:
			pp := ap.Child("prometheus")
			if err := analysis.ValidateAddress(a.Prometheus.Address); err != nil {
				v.add(field.Invalid(pp.Child("address"), a.Prometheus.Address, err.Error()))
			}
			if strings.TrimSpace(a.Prometheus.Query) == "" {
				v.add(field.Required(pp.Child("query"), "a PromQL instant query"))
			}
			if _, err := gate.ParseCondition(a.Prometheus.SuccessCondition); err != nil {
				v.add(field.Invalid(pp.Child("successCondition"), a.Prometheus.SuccessCondition, err.Error()))
			}
		default:
			if err := analysis.ValidateAddress(a.Webhook.URL); err != nil {
				v.add(field.Invalid(ap.Child("webhook", "url"), a.Webhook.URL, err.Error()))
			}
		}
	} else if g.OnFailure != "" {
		v.warn("%s has onFailure but no analysis: only a failed analysis applies it", p.Child("onFailure"))
	}
	seen := map[string]bool{}
	for i, c := range g.RequiredConditions {
		cp := p.Child("requiredConditions").Index(i)
		switch {
		case c.Type == "":
			v.add(field.Required(cp.Child("type"), "a condition type"))
		case seen[c.Type]:
			v.add(field.Duplicate(cp.Child("type"), c.Type))
		}
		seen[c.Type] = true
		switch c.Status {
		case metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown:
		default:
			v.add(field.NotSupported(cp.Child("status"), c.Status, []string{"True", "False", "Unknown"}))
		}
	}
	if g.SoakSeconds == 0 && !g.Approval && g.Analysis == nil && len(g.RequiredConditions) == 0 {
		v.warn("%s has no soakSeconds, requiredConditions, analysis or approval: it never holds the rollout", p)
	}
}

// validateRoleSteps enforces the step rules: known roles, targets within (0,
// replicas], and targets that never go backwards for a role.
func (v *pcsValidator) validateRoleSteps(p *field.Path, steps []v1alpha1.RoleUpgradeStep, roles map[string]role) {
	if len(steps) == 0 {
		v.add(field.Required(p, "roleUpgrade needs at least one step"))
	}
	last := map[string]int32{}
	for i, st := range steps {
		sp := p.Index(i)
		r, ok := roles[st.Role]
		if !ok {
			detail := fmt.Sprintf("must name a standalone clique or a scaling group; known roles: %s", strings.Join(sets.List(sets.KeySet(roles)), ", "))
			if g := v.pcs.Spec.Template.ScalingGroupOf(st.Role); g != nil {
				detail = fmt.Sprintf("clique %q is in scaling group %q, which updates as a whole: name the group instead", st.Role, g.Name)
			}
			v.add(field.Invalid(sp.Child("role"), st.Role, detail))
			continue
		}
		target, ok := v.stepTarget(sp.Child("updateTo"), st.UpdateTo, r.replicas)
		if !ok {
			continue
		}
		if prev, seen := last[st.Role]; seen && target < prev {
			v.add(field.Invalid(sp.Child("updateTo"), st.UpdateTo.String(), fmt.Sprintf("must not decrease for role %q: an earlier step already updates %d of its units", st.Role, prev)))
			continue
		}
		last[st.Role] = target
		if st.Gate != nil {
			v.validateGate(sp.Child("gate"), st.Gate)
		}
	}
}

// stepTarget validates updateTo and resolves it to a number of units (percentages
// round up, so any non-zero percentage means at least one unit).
func (v *pcsValidator) stepTarget(p *field.Path, to intstr.IntOrString, replicas int32) (int32, bool) {
	if errs := limit.ValidateTarget(p, to); len(errs) > 0 {
		v.errs = append(v.errs, errs...)
		return 0, false
	}
	n, _ := limit.Resolve(to, replicas, limit.Up)
	if n > replicas {
		v.add(field.Invalid(p, to.IntVal, fmt.Sprintf("must not exceed the role's replicas (%d)", replicas)))
		return 0, false
	}
	return n, true
}

// validateGeneratedNames checks that the longest pod hostname this PodCliqueSet
// can produce fits a DNS label, leaving room for indices up to 999 (or the
// largest index the spec asks for, when larger).
func (v *pcsValidator) validateGeneratedNames(replicas int32) {
	name := v.pcs.Name
	if name == "" {
		name = v.pcs.GenerateName + "xxxxx"
	}
	t := &v.pcs.Spec.Template
	ri := indexPlaceholder(replicas + v.surge(v.pcs.Spec.UpdateStrategy.RollingUpdate, replicas))
	for i := range t.Cliques {
		c := &t.Cliques[i]
		p := field.NewPath("spec", "template", "cliques").Index(i).Child("name")
		var pclq string
		if g := t.ScalingGroupOf(c.Name); g != nil {
			gri := indexPlaceholder(g.Replicas + v.componentSurge(g.UpdateStrategy, g.Replicas))
			pclq = naming.GroupPodClique(naming.ScalingGroup(name, ri, g.Name), gri, c.Name)
		} else {
			pclq = naming.PodClique(name, ri, c.Name)
		}
		host := naming.Pod(pclq, indexPlaceholder(c.Replicas+v.componentSurge(c.UpdateStrategy, c.Replicas)))
		if len(host) > k8svalidation.DNS1123LabelMaxLength {
			v.add(field.Invalid(p, c.Name, fmt.Sprintf("pod hostnames would be up to %d characters (%s), above the limit of %d: shorten the PodCliqueSet, scaling group or clique name", len(host), host, k8svalidation.DNS1123LabelMaxLength)))
		}
	}
}

// indexPlaceholder is the largest index with the digits generated names must
// leave room for.
func indexPlaceholder(count int32) int {
	digits := max(minIndexDigits, len(strconv.Itoa(int(max(count-1, 0)))))
	n := 0
	for range digits {
		n = n*10 + 9
	}
	return n
}

func (v *pcsValidator) surge(ru *v1alpha1.PodCliqueSetRollingUpdate, replicas int32) int32 {
	if ru == nil || v.pcs.Spec.UpdateStrategy.Type != v1alpha1.ReplicaRecreateStrategyType {
		return 0
	}
	return resolveSurge(ru.MaxSurge, replicas)
}

func (v *pcsValidator) componentSurge(s *v1alpha1.ComponentUpdateStrategy, replicas int32) int32 {
	if s == nil {
		return 0
	}
	return resolveSurge(s.MaxSurge, replicas)
}

// resolveSurge is maxSurge in units, 0 when it is malformed.
func resolveSurge(s *intstr.IntOrString, replicas int32) int32 {
	_, surge := limit.Defaulted(nil, s)
	n, _ := limit.Resolve(surge, replicas, limit.Up)
	return n
}

// warnReplicaRecreate points out ReplicaRecreate settings that cost a full outage
// or a full extra replica.
func (v *pcsValidator) warnReplicaRecreate(p *field.Path, ru *v1alpha1.PodCliqueSetRollingUpdate, replicas int32) {
	if ru.MaxUnavailable != nil && replicas > 0 {
		if n, err := limit.Resolve(*ru.MaxUnavailable, replicas, limit.Down); err == nil && n >= replicas {
			v.warn("%s lets all %d replicas be recreated at once: the workload is fully unavailable while they restart", p.Child("maxUnavailable"), replicas)
		}
	}
	if s := resolveSurge(ru.MaxSurge, replicas); s > 0 {
		v.warn("%s creates %d whole extra PodCliqueSet replica(s) (%s) during updates: the cluster needs room for them or the rollout stalls", p.Child("maxSurge"), s, v.replicaFootprint(1))
	}
}

// warnUnavailableSingleReplica flags updates that must take the only replica
// below its minimum, and surge that needs whole extra nodes.
func (v *pcsValidator) warnUnavailableSingleReplica(replicas int32) {
	t := &v.pcs.Spec.Template
	for i := range t.PodCliqueScalingGroups {
		g := &t.PodCliqueScalingGroups[i]
		if s := v.componentSurge(g.UpdateStrategy, g.Replicas); s > 0 {
			pods, res := v.groupFootprint(g)
			v.warn("spec.template.podCliqueScalingGroups[%d].updateStrategy.maxSurge creates %d extra replica(s) of scaling group %q, each %d pods%s, as a gang of its own: the cluster needs room for them or the rollout stalls", i, s, g.Name, pods, res)
		}
	}
	for i := range t.Cliques {
		c := &t.Cliques[i]
		if t.ScalingGroupOf(c.Name) != nil {
			continue
		}
		if s := v.componentSurge(c.UpdateStrategy, c.Replicas); s > 0 && podGPUs(&c.Template) > 0 {
			v.warn("spec.template.cliques[%d].updateStrategy.maxSurge adds %d pod(s) of clique %q, %d nvidia.com/gpu each, to its gang during updates: if they cannot be placed the update stalls", i, s, c.Name, podGPUs(&c.Template))
		}
	}
	if replicas != 1 || !v.pcs.Spec.UpdateStrategy.Type.IsRollingUpdate() {
		return
	}
	for i := range t.Cliques {
		c := &t.Cliques[i]
		if t.ScalingGroupOf(c.Name) != nil {
			continue
		}
		unavailable, _ := c.UpdateStrategy.Limits()
		mu, _ := limit.Resolve(unavailable, c.Replicas, limit.Down)
		ms := v.componentSurge(c.UpdateStrategy, c.Replicas)
		if c.Replicas > 0 && ms == 0 && c.Replicas-mu < c.EffectiveMinAvailable() {
			v.warn("spec.template.cliques[%d]: with a single PodCliqueSet replica, updating clique %q takes it below minAvailable (%d of %d pods), so the PodCliqueSet is unavailable during updates; set updateStrategy.maxSurge or lower minAvailable", i, c.Name, c.Replicas-mu, c.EffectiveMinAvailable())
		}
	}
}

// groupFootprint is the pods and accelerator requests of one scaling-group replica.
func (v *pcsValidator) groupFootprint(g *v1alpha1.PodCliqueScalingGroupConfig) (int32, string) {
	var pods int32
	gpus := int64(0)
	for _, n := range g.CliqueNames {
		c := v.pcs.Spec.Template.Clique(n)
		if c == nil {
			continue
		}
		pods += c.Replicas
		gpus += int64(c.Replicas) * podGPUs(&c.Template)
	}
	if gpus == 0 {
		return pods, ""
	}
	return pods, fmt.Sprintf(" requesting %d nvidia.com/gpu", gpus)
}

func (v *pcsValidator) replicaFootprint(n int) string {
	t := &v.pcs.Spec.Template
	var pods int32
	gpus := int64(0)
	for i := range t.Cliques {
		c := &t.Cliques[i]
		count := c.Replicas
		if g := t.ScalingGroupOf(c.Name); g != nil {
			count *= g.Replicas
		}
		pods += count
		gpus += int64(count) * podGPUs(&c.Template)
	}
	s := fmt.Sprintf("%d pods", int(pods)*n)
	if gpus > 0 {
		s += fmt.Sprintf(", %d nvidia.com/gpu", gpus*int64(n))
	}
	return s
}

const gpuResource = corev1.ResourceName("nvidia.com/gpu")

func podGPUs(t *corev1.PodTemplateSpec) int64 {
	var n int64
	for _, c := range t.Spec.Containers {
		if q, ok := c.Resources.Limits[gpuResource]; ok {
			n += q.Value()
		} else if q, ok := c.Resources.Requests[gpuResource]; ok {
			n += q.Value()
		}
	}
	return n
}

// validateComposition rejects changes to the set of cliques, scaling groups and
// group members: the operator cannot map running objects onto a new shape.
func validateComposition(oldT, newT *v1alpha1.PodCliqueSetTemplateSpec) field.ErrorList {
	var errs field.ErrorList
	const instead = "the composition of a PodCliqueSet (its cliques, scaling groups and their members) cannot change: create a new PodCliqueSet and move traffic to it instead"
	oldC, newC := cliqueNames(oldT), cliqueNames(newT)
	if !oldC.Equal(newC) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "template", "cliques"),
			fmt.Sprintf("%s (added: %v, removed: %v)", instead, sets.List(newC.Difference(oldC)), sets.List(oldC.Difference(newC)))))
	}
	oldG, newG := groupMembers(oldT), groupMembers(newT)
	if !oldG.Equal(newG) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "template", "podCliqueScalingGroups"),
			fmt.Sprintf("%s (added: %v, removed: %v)", instead, sets.List(newG.Difference(oldG)), sets.List(oldG.Difference(newG)))))
	}
	return errs
}

func cliqueNames(t *v1alpha1.PodCliqueSetTemplateSpec) sets.Set[string] {
	s := sets.New[string]()
	for _, c := range t.Cliques {
		s.Insert(c.Name)
	}
	return s
}

// groupMembers describes each group as "group[member,member]" so that renames and
// membership changes both show up.
func groupMembers(t *v1alpha1.PodCliqueSetTemplateSpec) sets.Set[string] {
	s := sets.New[string]()
	for _, g := range t.PodCliqueScalingGroups {
		s.Insert(g.Name + "[" + strings.Join(sets.List(sets.New(g.CliqueNames...)), ",") + "]")
	}
	return s
}

// ValidatePodClique checks the fields of a PodClique a user may change (for
// example replicas through /scale).
func ValidatePodClique(pclq *v1alpha1.PodClique) (field.ErrorList, []string) {
	c := validatePodClique(pclq)
	return c.errs, c.warnings
}

// ValidatePodCliqueScalingGroup checks a PodCliqueScalingGroup's own fields.
func ValidatePodCliqueScalingGroup(g *v1alpha1.PodCliqueScalingGroup) (field.ErrorList, []string) {
	c := validateScalingGroup(g)
	return c.errs, c.warnings
}

// ValidatePodCliqueScalingGroupUpdate checks an update: valid on its own, and
// the same cliques as before.
func ValidatePodCliqueScalingGroupUpdate(oldG, g *v1alpha1.PodCliqueScalingGroup) (field.ErrorList, []string) {
	errs, warnings := ValidatePodCliqueScalingGroup(g)
	errs = append(errs, validateComposition(
		&v1alpha1.PodCliqueSetTemplateSpec{Cliques: oldG.Spec.Cliques},
		&v1alpha1.PodCliqueSetTemplateSpec{Cliques: g.Spec.Cliques})...)
	return errs, warnings
}

// validatePodClique checks a PodClique's own fields.
func validatePodClique(pclq *v1alpha1.PodClique) *collector {
	c := &collector{}
	sp := field.NewPath("spec")
	c.validateReplicaCounts(sp, pclq.Spec.Replicas, pclq.Spec.MinAvailable)
	c.validateChildStrategy(sp.Child("updateStrategy"), &pclq.Spec.UpdateStrategy, pclq.Spec.Replicas)
	c.validatePodTemplate(sp.Child("template"), &pclq.Spec.Template)
	c.validateRevisionName(sp.Child("revision"), pclq.Spec.Revision)
	return c
}

// validateRevisionName: revisions become label values on every pod.
func (v *collector) validateRevisionName(p *field.Path, name string) {
	for _, msg := range k8svalidation.IsValidLabelValue(name) {
		v.add(field.Invalid(p, name, "must be usable as a label value: "+msg))
	}
}

// validateScalingGroup checks a PodCliqueScalingGroup's own fields.
func validateScalingGroup(g *v1alpha1.PodCliqueScalingGroup) *collector {
	c := &collector{}
	sp := field.NewPath("spec")
	c.validateReplicaCounts(sp, g.Spec.Replicas, g.Spec.MinAvailable)
	c.validateChildStrategy(sp.Child("updateStrategy"), &g.Spec.UpdateStrategy, g.Spec.Replicas)
	c.validateRevisionName(sp.Child("revision"), g.Spec.Revision)
	cp := sp.Child("cliques")
	if len(g.Spec.Cliques) == 0 {
		c.add(field.Required(cp, "a scaling group needs at least one clique"))
	}
	names := sets.New[string]()
	for i := range g.Spec.Cliques {
		cl := &g.Spec.Cliques[i]
		c.validateRoleName(cp.Index(i).Child("name"), cl.Name, names)
		c.validateReplicaCounts(cp.Index(i), cl.Replicas, cl.MinAvailable)
		c.validatePodTemplate(cp.Index(i).Child("template"), &cl.Template)
		c.validatePeerDNS(cp.Index(i).Child("peerDNS"), cl.PeerDNS)
	}
	return c
}

func (v *collector) validateChildStrategy(p *field.Path, s *v1alpha1.ChildUpdateStrategy, replicas int32) {
	switch s.Type {
	case "", v1alpha1.RollingUpdateStrategyType, v1alpha1.OnDeleteStrategyType:
	default:
		v.add(field.NotSupported(p.Child("type"), s.Type, []string{string(v1alpha1.RollingUpdateStrategyType), string(v1alpha1.OnDeleteStrategyType)}))
	}
	v.validateLimits(p, s.MaxUnavailable, s.MaxSurge, replicas)
	v.validateRevisionName(p.Child("currentRevision"), s.CurrentRevision)
	if s.MaxUpdated != nil && *s.MaxUpdated < 0 {
		v.add(field.Invalid(p.Child("maxUpdated"), *s.MaxUpdated, "must be greater than or equal to 0"))
	}
}

// validateReplicaReplacementPolicy: Immediate or PostTermination (empty is the
// default, Immediate). PostTermination on a PodCliqueSet without scaling
// groups that is not rolled by ReplicaRecreate has no replica to wait for: a
// warning, since the user likely meant podReplacementPolicy.
func (v *pcsValidator) validateReplicaReplacementPolicy(p *field.Path) {
	s := &v.pcs.Spec
	switch s.ReplicaReplacementPolicy {
	case "", v1alpha1.Immediate:
	case v1alpha1.PostTermination:
		if len(s.Template.PodCliqueScalingGroups) == 0 && s.UpdateStrategy.Type != v1alpha1.ReplicaRecreateStrategyType {
			v.warn("%s: PostTermination applies to scaling-group replicas and ReplicaRecreate replicas, and this PodCliqueSet has neither; "+
				"for the pods of standalone cliques set podReplacementPolicy: TerminationComplete", p)
		}
	default:
		v.add(field.NotSupported(p, s.ReplicaReplacementPolicy, []string{string(v1alpha1.Immediate), string(v1alpha1.PostTermination)}))
	}
}
