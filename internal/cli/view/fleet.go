package view

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/api/limit"
	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/cli/verdict"
)

// RenderFederated writes a FederatedWorkload as the hub reports it: a header
// with where its rollout stands, what the whole fleet waits on, and a tree of
// the workload (revision, counts, the global budget and how much of it is in
// use) and its member clusters (share, grant, counts, what each waits on).
// Everything comes from the FederatedWorkload's own status: the hub keeps
// status.clusters, so nothing here reads a member cluster.
func RenderFederated(w io.Writer, fw *fleetv1alpha1.FederatedWorkload, o Options) error {
	b := bufio.NewWriter(w)
	f := &fleetRenderer{renderer: &renderer{w: b, o: o}, fw: fw, tmpl: parseMemberTemplate(fw.Spec.Template.Raw)}
	f.header()
	f.waitingOn()
	f.tree()
	f.stages()
	return b.Flush()
}

// stages lists the rollout's stages, when it has any: each stage's phase and
// clusters, and what the gate after the one waiting waits for.
func (f *fleetRenderer) stages() {
	st := f.fw.Spec.RolloutStrategy.Stages
	if st == nil || len(f.fw.Status.Stages) == 0 {
		return
	}
	kind := st.Type
	if kind == "" {
		kind = fleetv1alpha1.StagesAll
	}
	f.printf("\n%s\n", f.paint(bold, fmt.Sprintf("Stages (%s)", kind)))
	rows := make([][]cell, 0, len(f.fw.Status.Stages))
	for _, s := range f.fw.Status.Stages {
		icon, style := "·", dim
		switch s.Phase {
		case fleetv1alpha1.StageSucceeded:
			icon, style = "✔", green
		case fleetv1alpha1.StageFailed:
			icon, style = "✖", red
		case fleetv1alpha1.StageProgressing, fleetv1alpha1.StageSoaking, fleetv1alpha1.StageAwaitingApproval:
			icon, style = "◐", yellow
		}
		note := ""
		if len(s.FailedClusters) > 0 {
			note = "failed: " + strings.Join(s.FailedClusters, ", ")
		}
		if g := f.fw.Status.Gate; g != nil && (s.Phase == fleetv1alpha1.StageAwaitingApproval || s.Phase == fleetv1alpha1.StageSoaking) && g.Name == "stage-"+s.Name {
			note = fmt.Sprintf("gate %s: %s", g.Name, g.Reason)
			if g.Reason == v1alpha1.ReasonAwaitingApproval {
				note += fmt.Sprintf(" (kubectl lockstep approve fw/%s)", f.fw.Name)
			}
			if a := g.Analysis; a != nil {
				note += fmt.Sprintf("; last analysis %s %s", a.Phase, a.Value)
			}
		}
		rows = append(rows, []cell{{text: icon, style: style}, {text: s.Name}, {text: string(s.Phase)}, {text: strings.Join(s.Clusters, " ")}, {text: note}})
	}
	for _, line := range f.columns(rows) {
		f.printf("  %s\n", strings.TrimRight(line, " "))
	}
}

type fleetRenderer struct {
	*renderer
	fw   *fleetv1alpha1.FederatedWorkload
	tmpl memberTemplate
}

// memberTemplate is what the view needs of spec.template.
type memberTemplate struct {
	kind string
	// images are one line per pod template: "web:v2", or for a PodCliqueSet
	// "frontend web:v2" per clique.
	images []string
}

// partitioned: the member moves unit by unit under a partition (StatefulSet,
// PodCliqueSet); otherwise (Deployment) it takes its whole share or none.
func (t memberTemplate) partitioned() bool {
	return t.kind == "StatefulSet" || t.kind == "PodCliqueSet"
}

// unit names one replica of the template's kind.
func (t memberTemplate) unit() string {
	if t.kind == "PodCliqueSet" {
		return "replica"
	}
	return "pod"
}

func parseMemberTemplate(raw []byte) memberTemplate {
	var t struct {
		Kind string `json:"kind"`
		Spec struct {
			Template json.RawMessage `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return memberTemplate{kind: "?"}
	}
	out := memberTemplate{kind: t.Kind}
	if len(t.Spec.Template) == 0 {
		return out
	}
	if t.Kind == "PodCliqueSet" {
		var pcs v1alpha1.PodCliqueSetTemplateSpec
		if json.Unmarshal(t.Spec.Template, &pcs) == nil {
			for i := range pcs.Cliques {
				out.images = append(out.images, pcs.Cliques[i].Name+" "+imagesOf(&pcs.Cliques[i].Template))
			}
		}
		return out
	}
	var pod corev1.PodTemplateSpec
	if json.Unmarshal(t.Spec.Template, &pod) == nil {
		out.images = []string{imagesOf(&pod)}
	}
	return out
}

func (f *fleetRenderer) condition(t fleetv1alpha1.FederatedWorkloadConditionType) *metav1.Condition {
	return apimeta.FindStatusCondition(f.fw.Status.Conditions, string(t))
}

// FederatedPhase is the one-word state of a FederatedWorkload's rollout,
// read from the same verdict `status` exits with: Complete, Progressing,
// Paused, Held (a partition keeps units back), Stalled or Pending. A status
// the hub wrote for an older generation gives the phase it says, as a
// PodCliqueSet's does; the header notes the lag.
func FederatedPhase(fw *fleetv1alpha1.FederatedWorkload) string {
	prog := apimeta.FindStatusCondition(fw.Status.Conditions, string(fleetv1alpha1.FederatedWorkloadProgressing))
	if prog == nil {
		return "Pending"
	}
	if fw.Status.ObservedGeneration < fw.Generation {
		// The phase of the status as it stands; the header notes the lag.
		cur := *fw
		cur.Status.ObservedGeneration = fw.Generation
		fw = &cur
	}
	v := verdict.OfFederated(verdict.FederatedInput{FW: fw})
	switch {
	case !v.Final:
		return "Progressing"
	case v.Code == verdict.Complete:
		return "Complete"
	case v.Code == verdict.Failed:
		return "Stalled"
	case prog.Reason == string(fleetv1alpha1.FederatedWorkloadReasonRolloutPaused):
		return "Paused"
	}
	return "Held"
}

// messageHead is what a FederatedWorkload's Progressing message says before
// the waits the hub lists after "; waiting for ".
func messageHead(msg string) string {
	head, _, _ := strings.Cut(msg, "; waiting for ")
	return head
}

// fleetWaits are the waits of a Progressing message that are not one
// member's: the hub lists "cluster NAME: WAITING" for each member that waits
// (WAITING as in status.clusters, and it may hold "; " itself), then the
// waits of the whole fleet, all joined with "; ", perhaps ending in "and N
// more".
func fleetWaits(msg string, members []fleetv1alpha1.FederatedClusterStatus) []string {
	_, rest, found := strings.Cut(msg, "; waiting for ")
	if !found {
		return nil
	}
	waiting := make(map[string]string, len(members))
	for _, c := range members {
		waiting[c.Name] = c.Waiting
	}
	var out []string
	for rest != "" {
		item := ""
		if after, ok := strings.CutPrefix(rest, "cluster "); ok {
			name, why, _ := strings.Cut(after, ": ")
			if w, known := waiting[name]; known {
				if strings.HasPrefix(why, w) && w != "" {
					rest = why[len(w):]
				} else if i := strings.Index(why, "; cluster "); i >= 0 {
					// A waiting cut short in the status, or changed since.
					rest = why[i:]
				} else {
					rest = ""
				}
				rest = strings.TrimPrefix(rest, "; ")
				continue
			}
		}
		item, rest, _ = strings.Cut(rest, "; ")
		if !strings.HasPrefix(item, "and ") && !strings.HasPrefix(item, "cluster ") {
			out = append(out, item)
		}
	}
	return out
}

func (f *fleetRenderer) header() {
	fw := f.fw
	phase := FederatedPhase(fw)
	status := f.paint(f.phaseStyle(phase), phase)
	if prog := f.condition(fleetv1alpha1.FederatedWorkloadProgressing); prog != nil {
		status += " (" + prog.Reason + ")"
		msg := messageHead(prog.Message)
		if prog.Reason == string(fleetv1alpha1.FederatedWorkloadReasonRolloutPaused) {
			// The paused message lists the members' waits, which the tree shows.
			msg = "spec.rolloutStrategy.paused is true: no member starts a new replacement"
		}
		if phase == "Held" && prog.Reason == string(fleetv1alpha1.FederatedWorkloadReasonRolloutComplete) {
			msg += fmt.Sprintf("; partition %d keeps the rest on the old revision", fw.Spec.RolloutStrategy.Partition)
		}
		if msg != "" {
			status += ": " + msg
		}
	}
	if fw.Status.ObservedGeneration < fw.Generation {
		status += f.paint(dim, fmt.Sprintf("   [generation %d not yet observed]", fw.Generation))
	}
	f.printf("%s\n", f.paint(bold, "FederatedWorkload "+fw.Namespace+"/"+fw.Name))
	f.field("status", status)
	f.field("template", fmt.Sprintf("%s, %d %ss", orUnknown(f.tmpl.kind), fw.Spec.Replicas, f.tmpl.unit()))
	for i, img := range f.tmpl.images {
		label := ""
		if i == 0 {
			label = "images"
		}
		f.field(label, img)
	}
	f.field("placement", fw.Spec.PlacementRef.Name)
}

func orUnknown(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

// waitingOn lists what the whole fleet waits on: the Progressing waits that
// are not one member's (those are on the member's line) and a fleet below its
// minimum availability.
func (f *fleetRenderer) waitingOn() {
	var lines []string
	if prog := f.condition(fleetv1alpha1.FederatedWorkloadProgressing); prog != nil {
		for _, w := range fleetWaits(prog.Message, f.fw.Status.Clusters) {
			lines = append(lines, f.paint(yellow, "•")+" "+w)
		}
	}
	if a := f.condition(fleetv1alpha1.FederatedWorkloadAvailable); a != nil && a.Status == metav1.ConditionFalse {
		lines = append(lines, f.paint(red, "•")+" "+a.Reason+": "+a.Message)
	}
	if len(lines) == 0 {
		f.printf("\n")
		return
	}
	f.printf("\n%s\n", f.paint(bold, "Waiting on"))
	for _, l := range lines {
		f.printf("  %s\n", l)
	}
	f.printf("\n")
}

// memberState is what a member's waiting says about it, beyond its counts.
type memberState int

const (
	memberOK memberState = iota
	memberStale
	memberLost
	memberConflict
	memberLeaving
)

// stateOf reads status.clusters[].waiting as the hub writes it: "Conflict:"
// (the API's contract), "unreachable ...", "status stale", "left the
// placement ...".
func stateOf(c *fleetv1alpha1.FederatedClusterStatus) memberState {
	switch w := c.Waiting; {
	case strings.HasPrefix(w, "Conflict:"):
		return memberConflict
	case strings.HasPrefix(w, "unreachable"):
		return memberLost
	case strings.HasPrefix(w, "status stale"):
		return memberStale
	case strings.HasPrefix(w, "left the placement"):
		return memberLeaving
	}
	return memberOK
}

// budgetInUse is how many units are unavailable now and how many run above
// replicas, as the members last reported them; a lost member or one held by
// another owner counts its whole share as unavailable, as the hub counts it.
func (f *fleetRenderer) budgetInUse() (unavailable, surge int32) {
	var running int32
	for i := range f.fw.Status.Clusters {
		c := &f.fw.Status.Clusters[i]
		avail := c.AvailableReplicas
		if s := stateOf(c); s == memberLost || s == memberConflict {
			avail = 0
		} else {
			running += c.Replicas
		}
		unavailable += max(0, c.DesiredReplicas-avail)
	}
	return unavailable, max(0, running-f.fw.Spec.Replicas)
}

func (f *fleetRenderer) tree() {
	fw := f.fw
	st := &fw.Status
	root := &node{name: fw.Name}
	root.icon, root.iconStyle = countIcon(st.AvailableReplicas, fw.Spec.Replicas)
	rev := "rev " + f.paint(green, orDash(st.UpdateRevision))
	gen := fmt.Sprintf("gen %d", fw.Generation)
	if st.ObservedGeneration < fw.Generation {
		gen = f.paint(yellow, fmt.Sprintf("gen %d (hub at %d)", fw.Generation, st.ObservedGeneration))
	}
	root.tags = []string{rev, gen, fmt.Sprintf("updated %d/%d", st.UpdatedReplicas, fw.Spec.Replicas)}
	avail := fmt.Sprintf("available %d/%d", st.AvailableReplicas, fw.Spec.Replicas)
	if a := f.condition(fleetv1alpha1.FederatedWorkloadAvailable); a != nil && a.Status == metav1.ConditionFalse {
		avail = f.paint(red, avail)
	}
	root.tags = append(root.tags, avail)
	rs := fw.Spec.RolloutStrategy
	budget, err := limit.ResolveBudget(rs.MaxUnavailable, rs.MaxSurge, fw.Spec.Replicas)
	if err != nil {
		root.tags = append(root.tags, f.paint(red, "budget: "+err.Error()))
	} else {
		unavailable, surge := f.budgetInUse()
		root.tags = append(root.tags, f.use("maxUnavailable", budget.MaxUnavailable, unavailable), f.use("maxSurge", budget.MaxSurge, surge))
	}
	if rs.Partition > 0 {
		root.tags = append(root.tags, f.paint(cyan, fmt.Sprintf("partition %d", rs.Partition)))
	}
	if rs.Paused {
		root.tags = append(root.tags, f.paint(cyan, "paused"))
	}
	var rows [][]cell
	for i := range st.Clusters {
		n, row := f.member(&st.Clusters[i])
		root.children = append(root.children, n)
		rows = append(rows, row)
	}
	for i, line := range f.columns(rows) {
		root.children[i].tags = []string{line}
	}
	f.drawRoot(root)
}

// use is "maxSurge 1 (0 used)": a global limit and what of it is in use,
// red above the limit.
func (f *fleetRenderer) use(name string, limit, used int32) string {
	text := fmt.Sprintf("%s %d (%d used)", name, limit, used)
	if used > limit {
		return f.paint(red, text)
	}
	return text
}

// drawRoot draws a tree whose root carries an icon and tags, its tags in the
// children's tag column.
func (r *renderer) drawRoot(root *node) {
	width := runeLen(root.name) + 2
	measure(root, "", true, &width)
	line := r.paint(root.iconStyle, root.icon) + " " + r.paint(bold, root.name)
	if len(root.tags) > 0 {
		line += strings.Repeat(" ", max(1, width-runeLen(root.name)-2+2)) + strings.Join(root.tags, "  ")
	}
	r.printf("%s\n", line)
	for i, c := range root.children {
		r.draw(c, "", i == len(root.children)-1, width)
	}
}

// countIcon is the icon of a unit with have of want available.
func countIcon(have, want int32) (string, string) {
	switch {
	case have >= want:
		return iconReady, green
	case have > 0:
		return iconPartial, yellow
	}
	return iconDown, red
}

// cell is one column of a member's line, styled once padded.
type cell struct{ text, style string }

// columns lines the cells of sibling rows up in columns, leaving out columns
// empty in every row.
func (r *renderer) columns(rows [][]cell) []string {
	var widths []int
	for _, row := range rows {
		for i, c := range row {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], runeLen(c.text))
		}
	}
	out := make([]string, len(rows))
	for k, row := range rows {
		last := -1
		for i, c := range row {
			if c.text != "" {
				last = i
			}
		}
		var parts []string
		for i := 0; i <= last; i++ {
			if widths[i] == 0 {
				continue
			}
			text := row[i].text
			pad := ""
			if i < last {
				pad = strings.Repeat(" ", widths[i]-runeLen(text))
			}
			if row[i].style != "" {
				text = r.paint(row[i].style, text)
			}
			parts = append(parts, text+pad)
		}
		out[k] = strings.Join(parts, "  ")
	}
	return out
}

// member is a member cluster's node and the cells of its line: share, grant,
// what it may still act on, updated, available, and what it waits on.
func (f *fleetRenderer) member(c *fleetv1alpha1.FederatedClusterStatus) (*node, []cell) {
	n := &node{name: c.Name}
	state := stateOf(c)
	switch state {
	case memberConflict, memberLost:
		n.icon, n.iconStyle = iconDown, red
	case memberLeaving:
		n.icon, n.iconStyle = iconGone, dim
	case memberStale:
		// Its counts are the last the hub read: not confirmed.
		n.icon, n.iconStyle = iconPartial, yellow
	default:
		n.icon, n.iconStyle = countIcon(c.AvailableReplicas, c.DesiredReplicas)
	}
	grant, grantStyle := f.grant(&c.Grant, c)
	still := ""
	if c.StillActing != nil {
		still = "still acting on " + f.limits(c.StillActing)
	}
	updated := cell{text: fmt.Sprintf("updated %d/%d", c.UpdatedReplicas, c.DesiredReplicas)}
	if c.UpdatedReplicas < c.DesiredReplicas {
		updated.style = yellow
	}
	available := cell{text: fmt.Sprintf("available %d/%d", c.AvailableReplicas, c.DesiredReplicas)}
	if c.AvailableReplicas < c.DesiredReplicas {
		available.style = yellow
	}
	waitStyle := yellow
	switch state {
	case memberConflict, memberLost:
		waitStyle = red
	case memberLeaving:
		waitStyle = dim
	}
	return n, []cell{
		{text: fmt.Sprintf("share %d", c.DesiredReplicas)},
		{text: grant, style: grantStyle},
		updated,
		available,
		{text: c.Waiting, style: waitStyle},
		{text: still, style: dim},
	}
}

// grant says what a member was told, in the terms of its kind: a Deployment
// member "not started" (it keeps the old template), "started, maxUnavailable
// 2, maxSurge 1", "started, paused", or "started, done" once it runs its whole
// share on the new revision; a StatefulSet or PodCliqueSet member its
// "partition 3" (", paused" when paused).
func (f *fleetRenderer) grant(g *fleetv1alpha1.MemberGrant, c *fleetv1alpha1.FederatedClusterStatus) (string, string) {
	var parts []string
	style := ""
	if !g.Started {
		parts, style = append(parts, "not started"), cyan
	}
	switch {
	case f.tmpl.partitioned():
		parts = append(parts, fmt.Sprintf("partition %d", g.Partition))
		if g.Paused {
			parts, style = append(parts, "paused"), cyan
		}
	case !g.Started:
	case g.Paused && c.UpdatedReplicas >= c.DesiredReplicas && c.AvailableReplicas >= c.DesiredReplicas:
		parts = append(parts, "started", "done")
	case g.Paused:
		parts, style = append(parts, "started", "paused"), cyan
	default:
		parts = append(parts, "started", fmt.Sprintf("maxUnavailable %d", g.MaxUnavailable), fmt.Sprintf("maxSurge %d", g.MaxSurge))
	}
	return strings.Join(parts, ", "), style
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// limits are the limits of a grant a member may still act on: its
// partition, or a Deployment's maxUnavailable and maxSurge.
func (f *fleetRenderer) limits(g *fleetv1alpha1.MemberGrant) string {
	if f.tmpl.partitioned() {
		return fmt.Sprintf("partition %d", g.Partition)
	}
	return fmt.Sprintf("maxUnavailable %d, maxSurge %d", g.MaxUnavailable, g.MaxSurge)
}
