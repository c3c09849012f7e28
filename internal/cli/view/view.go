// Package view renders a PodCliqueSet and what it owns as text for a person:
// a header with where the rollout stands, what it waits on, and a tree of
// replicas, cliques, scaling groups and pods. Objects in, text out; nothing here
// talks to a cluster.
package view

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/revision"
)

// Snapshot is a PodCliqueSet and everything it owns, read at Now.
type Snapshot struct {
	PCS     *v1alpha1.PodCliqueSet
	Groups  []v1alpha1.PodCliqueScalingGroup
	Cliques []v1alpha1.PodClique
	Pods    []corev1.Pod
	// Revisions are the PodCliqueSet's ControllerRevisions; with the current one
	// among them the header shows which images change.
	Revisions []appsv1.ControllerRevision
	Now       time.Time
}

// Options choose what Render shows.
type Options struct {
	// Pods lists every pod under its clique instead of counts.
	Pods bool
	// Color adds ANSI colours.
	Color bool
}

// Render writes the header, the "waiting on" block and the tree.
func Render(w io.Writer, s *Snapshot, o Options) error {
	b := bufio.NewWriter(w)
	r := &renderer{w: b, s: s, o: o, short: shortRevision(s.PCS.Name)}
	r.header()
	r.waitingOn()
	r.tree()
	return b.Flush()
}

type renderer struct {
	w     *bufio.Writer
	s     *Snapshot
	o     Options
	short func(string) string
}

func (r *renderer) printf(format string, args ...any) { _, _ = fmt.Fprintf(r.w, format, args...) }

// ANSI styles.
const (
	green  = "32"
	yellow = "33"
	red    = "31"
	cyan   = "36"
	dim    = "2"
	bold   = "1"
)

func (r *renderer) paint(style, text string) string {
	if !r.o.Color || text == "" {
		return text
	}
	return "\x1b[" + style + "m" + text + "\x1b[0m"
}

// field prints one header line: a label column and its text.
func (r *renderer) field(label, text string) {
	r.printf("  %-11s%s\n", label, text)
}

// Phase is the one-word state of a rollout the header leads with.
func Phase(pcs *v1alpha1.PodCliqueSet) string {
	c := apimeta.FindStatusCondition(pcs.Status.Conditions, string(v1alpha1.ConditionProgressing))
	switch {
	case c == nil:
		return "Pending"
	case c.Status == metav1.ConditionFalse:
		return "Stalled"
	}
	switch v1alpha1.ConditionReason(c.Reason) {
	case v1alpha1.ReasonRolloutComplete:
		return "Complete"
	case v1alpha1.ReasonPaused:
		return "Paused"
	case v1alpha1.ReasonPartitionReached, v1alpha1.ReasonWaitingForDeletion, v1alpha1.ReasonAwaitingApproval:
		return "Held"
	}
	return "Progressing"
}

func (r *renderer) phaseStyle(phase string) string {
	switch phase {
	case "Complete":
		return green
	case "Stalled":
		return red
	case "Paused", "Held":
		return cyan
	}
	return yellow
}

func (r *renderer) header() {
	pcs := r.s.PCS
	phase := Phase(pcs)
	status := r.paint(r.phaseStyle(phase), phase)
	c := apimeta.FindStatusCondition(pcs.Status.Conditions, string(v1alpha1.ConditionProgressing))
	if c != nil {
		status += " (" + c.Reason + ")"
		if msg, _ := SplitWaiting(c.Message); msg != "" {
			status += ": " + msg
		}
	}
	if pcs.Status.ObservedGeneration < pcs.Generation {
		status += r.paint(dim, fmt.Sprintf("   [generation %d not yet observed]", pcs.Generation))
	}
	r.printf("%s\n", r.paint(bold, "PodCliqueSet "+pcs.Namespace+"/"+pcs.Name))
	r.field("status", status)
	r.field("strategy", r.strategy())
	cur, upd := pcs.Status.CurrentRevision, pcs.Status.UpdateRevision
	if cur == upd || cur == "" {
		r.field("revision", r.paint(green, r.short(upd)))
	} else {
		r.field("revisions", fmt.Sprintf("current %s -> update %s", r.paint(yellow, r.short(cur)), r.paint(green, r.short(upd))))
	}
	r.images()
	r.field("replicas", fmt.Sprintf("desired %d   updated %d   ready %d   available %d",
		pcs.Spec.DesiredReplicas(), pcs.Status.UpdatedReplicas, pcs.Status.ReadyReplicas, pcs.Status.AvailableReplicas))
	if t := r.timing(phase); t != "" {
		r.field("rollout", t)
	}
	if g := r.gate(); g != "" {
		r.field("gate", g)
	}
}

// gate says which checkpoint the rollout waits at, for what, and since when.
func (r *renderer) gate() string {
	up := r.s.PCS.Status.UpdateProgress
	if up == nil || up.Gate == nil || up.UpdateEndedAt != nil {
		return ""
	}
	g := up.Gate
	since := Duration(r.s.Now.Sub(g.ReachedAt.Time))
	switch g.Reason {
	case v1alpha1.ReasonAwaitingApproval:
		return fmt.Sprintf("%s %s for %s   approve: kubectl lockstep approve %s", r.paint(cyan, g.Name), r.paint(yellow, "awaiting approval"),
			since, r.s.PCS.Name)
	case v1alpha1.ReasonSoaking:
		return fmt.Sprintf("%s %s for %s", r.paint(cyan, g.Name), r.paint(yellow, "soaking"), since)
	case v1alpha1.ReasonAnalysisRunning, v1alpha1.ReasonAnalysisFailed:
		state, style := "measuring", yellow
		if g.Reason == v1alpha1.ReasonAnalysisFailed {
			state, style = "analysis failed", red
		}
		out := fmt.Sprintf("%s %s for %s", r.paint(cyan, g.Name), r.paint(style, state), since)
		if a := g.Analysis; a != nil {
			out += fmt.Sprintf("   last: %s, %s (%s ago)", a.Phase, a.Message, Duration(r.s.Now.Sub(a.MeasuredAt.Time)))
		}
		if g.Reason == v1alpha1.ReasonAnalysisFailed {
			out += fmt.Sprintf("   override: kubectl lockstep approve %s", r.s.PCS.Name)
		}
		return out
	}
	return fmt.Sprintf("%s %s for %s", r.paint(cyan, g.Name), g.Reason, since)
}

func (r *renderer) strategy() string {
	spec := &r.s.PCS.Spec
	typ := string(spec.UpdateStrategy.Type)
	if typ == "" {
		typ = string(v1alpha1.RollingUpdateStrategyType)
	}
	parts := []string{typ}
	if ru := spec.UpdateStrategy.RoleUpgrade; ru != nil {
		parts = append(parts, r.roleStep(len(ru.Steps)))
	}
	partition := int32(0)
	if ru := spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		partition = *ru.Partition
	}
	parts = append(parts, fmt.Sprintf("partition %d", partition))
	if spec.Paused {
		parts = append(parts, r.paint(cyan, "paused"))
	} else {
		parts = append(parts, "not paused")
	}
	return strings.Join(parts, "   ")
}

// roleStep is "role step i/N: ROLE to T (U now)" for the lowest updating replica.
func (r *renderer) roleStep(steps int) string {
	up := r.s.PCS.Status.UpdateProgress
	if up != nil {
		for _, u := range up.UpdatingReplicas {
			s := u.RoleStep
			if s == nil {
				continue
			}
			if s.Role == "" {
				return fmt.Sprintf("role steps %d/%d done", steps, steps)
			}
			return fmt.Sprintf("role step %d/%d: %s to %d (%d now)", s.Index+1, steps, s.Role, s.Target, s.UpdatedAndReady)
		}
	}
	return fmt.Sprintf("%d role steps", steps)
}

// images lists each clique's images, old -> new where the current revision differs.
func (r *renderer) images() {
	var current *appsv1.ControllerRevision
	for i := range r.s.Revisions {
		if r.s.Revisions[i].Name == r.s.PCS.Status.CurrentRevision {
			current = &r.s.Revisions[i]
		}
	}
	var items []string
	for i := range r.s.PCS.Spec.Template.Cliques {
		c := &r.s.PCS.Spec.Template.Cliques[i]
		now := imagesOf(&c.Template)
		item := c.Name + " " + now
		if current != nil && current.Name != r.s.PCS.Status.UpdateRevision {
			if t, _, err := revision.CliqueTemplate(current, c.Name); err == nil {
				if was := imagesOf(&t.Template); was != now {
					item = c.Name + " " + r.paint(yellow, was) + " -> " + r.paint(green, now)
				}
			}
		}
		items = append(items, item)
	}
	for i, item := range items {
		label := ""
		if i == 0 {
			label = "images"
		}
		r.field(label, item)
	}
}

func imagesOf(t *corev1.PodTemplateSpec) string {
	var out []string
	for _, c := range t.Spec.Containers {
		out = append(out, c.Image)
	}
	return strings.Join(out, ",")
}

// timing says how long the rollout has run and how long it may still go
// without progress.
func (r *renderer) timing(phase string) string {
	pcs := r.s.PCS
	up := pcs.Status.UpdateProgress
	if up == nil || up.UpdateStartedAt == nil {
		return ""
	}
	started := up.UpdateStartedAt.Time
	if up.UpdateEndedAt != nil {
		return fmt.Sprintf("took %s, ended %s ago", Duration(up.UpdateEndedAt.Sub(started)), Duration(r.s.Now.Sub(up.UpdateEndedAt.Time)))
	}
	out := fmt.Sprintf("started %s ago", Duration(r.s.Now.Sub(started)))
	deadline := int32(600)
	if pcs.Spec.ProgressDeadlineSeconds != nil {
		deadline = *pcs.Spec.ProgressDeadlineSeconds
	}
	last := started
	if up.LastProgressAt != nil {
		last = up.LastProgressAt.Time
	}
	left := last.Add(time.Duration(deadline) * time.Second).Sub(r.s.Now)
	switch {
	case phase == "Paused":
		out += "   deadline stopped while paused"
	case up.Gate != nil:
		out += "   deadline stopped at the gate"
	case phase == "Stalled":
		out += "   " + r.paint(red, fmt.Sprintf("no progress for %s (deadline %ds)", Duration(r.s.Now.Sub(last)), deadline))
	case left <= 0:
		out += fmt.Sprintf("   deadline due (%ds without progress)", deadline)
	default:
		out += fmt.Sprintf("   deadline in %s (last progress %s ago)", Duration(left), Duration(r.s.Now.Sub(last)))
	}
	return out
}

// Duration prints d like kubectl's ages: 45s, 3m12s, 2h5m.
func Duration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s"
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}

// SplitWaiting splits a Progressing message into what it says and the pods it
// waits on, each "pod NAME (why)" as the operator writes them after
// "; waiting for ".
func SplitWaiting(msg string) (string, []string) {
	head, rest, found := strings.Cut(msg, "; waiting for ")
	if !found {
		return msg, nil
	}
	var items []string
	depth, start := 0, 0
	for i := 0; i < len(rest); i++ {
		switch rest[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 && strings.HasPrefix(rest[i:], ", ") {
				items = append(items, strings.TrimSpace(rest[start:i]))
				start = i + 2
			}
		}
	}
	last := strings.TrimSpace(rest[start:])
	if depth == 0 {
		if before, more, ok := cutLast(last, " and "); ok && strings.HasSuffix(more, " more") {
			items = append(items, before, "and "+more)
			return head, items
		}
	}
	return head, append(items, last)
}

// cutLast cuts s around the last sep outside parentheses.
func cutLast(s, sep string) (string, string, bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 || strings.LastIndex(s, ")") > i {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

func (r *renderer) waitingOn() {
	var lines []string
	if c := apimeta.FindStatusCondition(r.s.PCS.Status.Conditions, string(v1alpha1.ConditionProgressing)); c != nil {
		_, lines = SplitWaiting(c.Message)
	}
	if g := apimeta.FindStatusCondition(r.s.PCS.Status.Conditions, string(v1alpha1.ConditionGangScheduled)); g != nil && g.Status == metav1.ConditionFalse {
		lines = append(lines, "gang "+g.Reason+": "+g.Message)
	}
	if len(lines) == 0 {
		r.printf("\n")
		return
	}
	r.printf("\n%s\n", r.paint(bold, "Waiting on"))
	for _, l := range lines {
		r.printf("  %s %s\n", r.paint(yellow, "•"), l)
	}
	r.printf("\n")
}
