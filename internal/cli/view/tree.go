package view

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Icons of the tree: the state of a unit's pods.
const (
	iconReady       = "✔" // every pod ready
	iconPartial     = "◐" // some pods ready, or ready ones still to come
	iconDown        = "✖" // no pod ready, or a pod failed
	iconUnscheduled = "○" // not placed on a node yet
	iconGone        = "⊘" // terminating
)

// node is one line of the tree.
type node struct {
	icon, iconStyle string
	name            string
	tags            []string
	children        []*node
}

func (r *renderer) tree() {
	root := &node{name: r.s.PCS.Name}
	for _, i := range r.replicaIndices() {
		root.children = append(root.children, r.replica(i))
	}
	width := 0
	measure(root, "", true, &width)
	r.printf("%s\n", r.paint(bold, root.name))
	for i, c := range root.children {
		r.draw(c, "", i == len(root.children)-1, width)
	}
}

// measure finds the widest "prefix icon name" so tags line up in a column.
func measure(n *node, prefix string, top bool, width *int) {
	if !top {
		*width = max(*width, runeLen(prefix)+3+2+runeLen(n.name))
		prefix += "   "
	}
	for _, c := range n.children {
		measure(c, prefix, false, width)
	}
}

func (r *renderer) draw(n *node, prefix string, last bool, width int) {
	branch, next := "├─ ", "│  "
	if last {
		branch, next = "└─ ", "   "
	}
	plain := prefix + branch + n.icon + " " + n.name
	line := r.paint(dim, prefix+branch) + r.paint(n.iconStyle, n.icon) + " " + n.name
	if len(n.tags) > 0 {
		line += strings.Repeat(" ", max(1, width-runeLen(plain)+2)) + strings.Join(n.tags, "  ")
	}
	r.printf("%s\n", line)
	for i, c := range n.children {
		r.draw(c, prefix+next, i == len(n.children)-1, width)
	}
}

func runeLen(s string) int { return len([]rune(s)) }

func (r *renderer) replicaIndices() []int32 {
	seen := map[int32]bool{}
	for i := range r.s.Cliques {
		if v, ok := labelIndex(r.s.Cliques[i].Labels, v1alpha1.LabelPodCliqueSetReplicaIndex); ok {
			seen[v] = true
		}
	}
	for i := range r.s.Groups {
		if v, ok := labelIndex(r.s.Groups[i].Labels, v1alpha1.LabelPodCliqueSetReplicaIndex); ok {
			seen[v] = true
		}
	}
	out := make([]int32, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

func labelIndex(labels map[string]string, key string) (int32, bool) {
	return v1alpha1.IndexLabel(labels, key)
}

func (r *renderer) replica(i int32) *node {
	n := &node{name: fmt.Sprintf("replica %d", i)}
	var pods []*corev1.Pod
	spec := &r.s.PCS.Spec.Template
	for _, c := range r.cliquesOf(i, "", -1) {
		n.children = append(n.children, r.clique(c, c.Labels[v1alpha1.LabelClique]))
		pods = append(pods, r.podsOf(c.Name)...)
	}
	for gi := range spec.PodCliqueScalingGroups {
		cfg := &spec.PodCliqueScalingGroups[gi]
		for j := range r.s.Groups {
			g := &r.s.Groups[j]
			if idx, _ := labelIndex(g.Labels, v1alpha1.LabelPodCliqueSetReplicaIndex); idx != i || g.Labels[v1alpha1.LabelPodCliqueScalingGroup] != cfg.Name {
				continue
			}
			gn, gpods := r.group(i, cfg, g)
			n.children = append(n.children, gn)
			pods = append(pods, gpods...)
		}
	}
	ready, total := readyOf(pods)
	n.icon, n.iconStyle = unitIcon(ready, total, pods)
	n.tags = append(n.tags, r.revTag(pods))
	var progress *v1alpha1.PodCliqueSetReplicaUpdateProgress
	if up := r.s.PCS.Status.UpdateProgress; up != nil && up.UpdateEndedAt == nil {
		for k := range up.UpdatingReplicas {
			if up.UpdatingReplicas[k].ReplicaIndex == i {
				progress = &up.UpdatingReplicas[k]
			}
		}
	}
	if progress != nil {
		n.tags = append(n.tags, r.paint(yellow, "updating"))
		if progress.Surge {
			n.tags = append(n.tags, r.paint(cyan, "surge"))
		}
		if s := progress.RoleStep; s != nil && s.Role != "" {
			steps := 0
			if ru := r.s.PCS.Spec.UpdateStrategy.RoleUpgrade; ru != nil {
				steps = len(ru.Steps)
			}
			n.tags = append(n.tags, r.paint(cyan, fmt.Sprintf("step %d/%d", s.Index+1, steps))+fmt.Sprintf(" %s %d/%d", s.Role, s.UpdatedAndReady, s.Target))
		}
	}
	if r.heldByPartition(i, pods) {
		n.tags = append(n.tags, r.paint(cyan, "held")+" (partition)")
	}
	if reason := r.gangNotScheduled(i); reason != "" {
		n.tags = append(n.tags, r.paint(red, "gang:"+reason))
	}
	n.tags = append(n.tags, fmt.Sprintf("ready %d/%d", ready, total))
	return n
}

func (r *renderer) heldByPartition(i int32, pods []*corev1.Pod) bool {
	ru := r.s.PCS.Spec.UpdateStrategy.RollingUpdate
	if ru == nil || ru.Partition == nil || i >= *ru.Partition {
		return false
	}
	for _, p := range pods {
		if p.Labels[v1alpha1.LabelPodCliqueSetRevision] != r.s.PCS.Status.UpdateRevision {
			return true
		}
	}
	return false
}

// gangNotScheduled is "NotScheduled" when GangScheduled names replica i as unplaced.
func (r *renderer) gangNotScheduled(i int32) string {
	g := apimeta.FindStatusCondition(r.s.PCS.Status.Conditions, string(v1alpha1.ConditionGangScheduled))
	if g == nil || g.Status != metav1.ConditionFalse {
		return ""
	}
	prefix := fmt.Sprintf("replica %d: ", i)
	for _, part := range strings.Split(g.Message, "; ") {
		if strings.HasPrefix(part, prefix) {
			return "NotScheduled"
		}
	}
	return ""
}

// cliquesOf are the PodCliques of PodCliqueSet replica i: standalone ones when
// group is "", else the members of group replica groupReplica, in template order.
func (r *renderer) cliquesOf(i int32, group string, groupReplica int32) []*v1alpha1.PodClique {
	var out []*v1alpha1.PodClique
	for k := range r.s.Cliques {
		c := &r.s.Cliques[k]
		if idx, _ := labelIndex(c.Labels, v1alpha1.LabelPodCliqueSetReplicaIndex); idx != i || c.Labels[v1alpha1.LabelPodCliqueScalingGroup] != group {
			continue
		}
		if group != "" {
			if gr, _ := labelIndex(c.Labels, v1alpha1.LabelPodCliqueScalingGroupReplicaIndex); gr != groupReplica {
				continue
			}
		}
		out = append(out, c)
	}
	order := map[string]int{}
	for k, c := range r.s.PCS.Spec.Template.Cliques {
		order[c.Name] = k
	}
	slices.SortStableFunc(out, func(a, b *v1alpha1.PodClique) int {
		return cmp.Or(cmp.Compare(order[a.Labels[v1alpha1.LabelClique]], order[b.Labels[v1alpha1.LabelClique]]), strings.Compare(a.Name, b.Name))
	})
	return out
}

func (r *renderer) group(i int32, cfg *v1alpha1.PodCliqueScalingGroupConfig, g *v1alpha1.PodCliqueScalingGroup) (*node, []*corev1.Pod) {
	n := &node{name: cfg.Name}
	seen := map[int32]bool{}
	for k := range r.s.Cliques {
		c := &r.s.Cliques[k]
		if idx, _ := labelIndex(c.Labels, v1alpha1.LabelPodCliqueSetReplicaIndex); idx != i || c.Labels[v1alpha1.LabelPodCliqueScalingGroup] != cfg.Name {
			continue
		}
		if gr, ok := labelIndex(c.Labels, v1alpha1.LabelPodCliqueScalingGroupReplicaIndex); ok {
			seen[gr] = true
		}
	}
	indices := make([]int32, 0, len(seen))
	for gr := range seen {
		indices = append(indices, gr)
	}
	slices.Sort(indices)
	var selected []int32
	if up := g.Status.UpdateProgress; up != nil && up.UpdateEndedAt == nil {
		selected = up.ReplicaIndicesSelectedToUpdate
	}
	var all []*corev1.Pod
	for _, gr := range indices {
		rn := &node{name: fmt.Sprintf("%s %d", cfg.Name, gr)}
		var pods []*corev1.Pod
		surge := false
		for _, c := range r.cliquesOf(i, cfg.Name, gr) {
			rn.children = append(rn.children, r.clique(c, c.Labels[v1alpha1.LabelClique]))
			pods = append(pods, r.podsOf(c.Name)...)
			surge = surge || c.Labels[v1alpha1.LabelSurge] == "true"
		}
		ready, total := readyOf(pods)
		rn.icon, rn.iconStyle = unitIcon(ready, total, pods)
		rn.tags = append(rn.tags, r.revTag(pods))
		if slices.Contains(selected, gr) {
			rn.tags = append(rn.tags, r.paint(yellow, "updating"))
		}
		if surge {
			rn.tags = append(rn.tags, r.paint(cyan, "surge"))
		}
		rn.tags = append(rn.tags, fmt.Sprintf("ready %d/%d", ready, total))
		n.children = append(n.children, rn)
		all = append(all, pods...)
	}
	ready, total := readyOf(all)
	n.icon, n.iconStyle = unitIcon(ready, total, all)
	if n.icon == iconReady && g.Status.AvailableReplicas < g.Spec.Replicas {
		n.icon, n.iconStyle = iconPartial, yellow
	}
	n.tags = append(n.tags, r.paint(dim, "scaling group"))
	n.tags = append(n.tags, r.childTags(&g.Status)...)
	n.tags = append(n.tags, fmt.Sprintf("available %d/%d", g.Status.AvailableReplicas, g.Spec.Replicas))
	return n, all
}

func (r *renderer) clique(c *v1alpha1.PodClique, role string) *node {
	pods := r.podsOf(c.Name)
	name := role
	if name == "" {
		name = c.Name
	}
	n := &node{name: name}
	ready, total := readyOf(pods)
	n.icon, n.iconStyle = unitIcon(ready, total, pods)
	n.tags = append(n.tags, r.revTag(pods))
	n.tags = append(n.tags, r.childTags(&c.Status)...)
	if c.Labels[v1alpha1.LabelSurge] == "true" {
		n.tags = append(n.tags, r.paint(cyan, "surge"))
	}
	n.tags = append(n.tags, fmt.Sprintf("ready %d/%d", ready, c.Spec.Replicas))
	if c.Status.UpdatedReplicas < c.Spec.Replicas {
		n.tags = append(n.tags, fmt.Sprintf("updated %d/%d", c.Status.UpdatedReplicas, c.Spec.Replicas))
	}
	if r.o.Pods {
		for _, p := range pods {
			n.children = append(n.children, r.pod(p))
		}
	}
	return n
}

// childTags are "updating" or "held" from a child's Progressing condition.
func (r *renderer) childTags(st *v1alpha1.ChildStatus) []string {
	c := apimeta.FindStatusCondition(st.Conditions, string(v1alpha1.ConditionProgressing))
	if c == nil {
		return nil
	}
	switch v1alpha1.ConditionReason(c.Reason) {
	case v1alpha1.ReasonUpdating:
		return []string{r.paint(yellow, "updating")}
	case v1alpha1.ReasonHeldBackByOwner:
		return []string{r.paint(cyan, "held")}
	case v1alpha1.ReasonWaitingForDeletion:
		return []string{r.paint(cyan, "waiting for deletion")}
	}
	return nil
}

func (r *renderer) pod(p *corev1.Pod) *node {
	n := &node{name: p.Name}
	n.tags = append(n.tags, r.revTag([]*corev1.Pod{p}))
	switch {
	case p.DeletionTimestamp != nil:
		n.icon, n.iconStyle = iconGone, dim
		n.tags = append(n.tags, r.paint(dim, "terminating"))
	case p.Status.Phase == corev1.PodFailed:
		n.icon, n.iconStyle = iconDown, red
		n.tags = append(n.tags, r.paint(red, "failed"))
	case p.Spec.NodeName == "":
		n.icon, n.iconStyle = iconUnscheduled, yellow
		why := "not scheduled"
		if len(p.Spec.SchedulingGates) > 0 {
			why = "gated"
		}
		n.tags = append(n.tags, r.paint(yellow, why))
	case podReady(p):
		n.icon, n.iconStyle = iconReady, green
		n.tags = append(n.tags, "ready")
	default:
		n.icon, n.iconStyle = iconPartial, yellow
		n.tags = append(n.tags, r.paint(yellow, "not ready"))
	}
	if p.Labels[v1alpha1.LabelSurge] == "true" {
		n.tags = append(n.tags, r.paint(cyan, "surge"))
	}
	return n
}

// podsOf are the pods of a PodClique, by pod index.
func (r *renderer) podsOf(clique string) []*corev1.Pod {
	var out []*corev1.Pod
	for k := range r.s.Pods {
		p := &r.s.Pods[k]
		if p.Labels[v1alpha1.LabelPodClique] == clique {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int {
		ia, _ := labelIndex(a.Labels, v1alpha1.LabelPodIndex)
		ib, _ := labelIndex(b.Labels, v1alpha1.LabelPodIndex)
		return cmp.Or(cmp.Compare(ia, ib), strings.Compare(a.Name, b.Name))
	})
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// readyOf counts ready pods among those not terminating, and those pods.
func readyOf(pods []*corev1.Pod) (ready, total int) {
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		total++
		if podReady(p) {
			ready++
		}
	}
	return ready, total
}

func unitIcon(ready, total int, pods []*corev1.Pod) (icon, style string) {
	switch {
	case total > 0 && ready == total:
		return iconReady, green
	case ready > 0:
		return iconPartial, yellow
	}
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Spec.NodeName != "" {
			return iconDown, red
		}
	}
	switch {
	case len(pods) == 0:
		return iconDown, red
	case total == 0:
		return iconGone, dim
	}
	return iconUnscheduled, yellow
}

// revTag names the revisions the pods run: "rev 5d8f" or "rev 5d8f×2 7b9c×1",
// the update revision first and green, older ones yellow.
func (r *renderer) revTag(pods []*corev1.Pod) string {
	count := map[string]int{}
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			count[p.Labels[v1alpha1.LabelPodCliqueSetRevision]]++
		}
	}
	if len(count) == 0 {
		if len(pods) > 0 {
			return r.paint(dim, "terminating")
		}
		return r.paint(dim, "no pods")
	}
	update := r.s.PCS.Status.UpdateRevision
	revs := make([]string, 0, len(count))
	for rev := range count {
		revs = append(revs, rev)
	}
	slices.SortFunc(revs, func(a, b string) int {
		return cmp.Or(-cmp.Compare(boolInt(a == update), boolInt(b == update)), strings.Compare(a, b))
	})
	var parts []string
	for _, rev := range revs {
		style := yellow
		if rev == update {
			style = green
		}
		text := r.short(rev)
		if len(count) > 1 {
			text += fmt.Sprintf("×%d", count[rev])
		}
		parts = append(parts, r.paint(style, text))
	}
	return "rev " + strings.Join(parts, " ")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// shortRevision drops the "<pcs>-" prefix of ControllerRevision names.
func shortRevision(pcs string) func(string) string {
	return func(rev string) string {
		if rev == "" {
			return "-"
		}
		return strings.TrimPrefix(rev, pcs+"-")
	}
}
