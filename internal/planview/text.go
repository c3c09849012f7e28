package planview

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lockstep-dev/lockstep/api/limit"
	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/rollout"
	"github.com/lockstep-dev/lockstep/internal/simulate"
)

// lineWidth is the widest line the text rendering aims for.
const lineWidth = 99

// WriteText writes the plan for a person: what changes and how it is rolled out,
// the timeline of actions with the progress of every role, and the result.
func WriteText(w io.Writer, p *Plan) error {
	b := bufio.NewWriter(w)
	t := &textWriter{w: b, p: p}
	t.header()
	t.timeline()
	t.result()
	return b.Flush()
}

type textWriter struct {
	w *bufio.Writer
	p *Plan
}

func (t *textWriter) printf(format string, args ...any) {
	_, _ = fmt.Fprintf(t.w, format, args...)
}

// field prints "  label      text", wrapping text at word boundaries under itself.
func (t *textWriter) field(label, text string) {
	const indent = "  "
	const labelWidth = 17
	for i, line := range wrap(text, lineWidth-len(indent)-labelWidth) {
		if i > 0 {
			label = ""
		}
		t.printf("%s%-*s%s\n", indent, labelWidth, label, line)
	}
}

// wrap splits text into lines of at most width runes, at spaces; runs of three
// spaces separate items that are kept whole where they fit.
func wrap(text string, width int) []string {
	var lines []string
	for _, item := range strings.Split(text, "   ") {
		words := strings.Fields(item)
		if len(lines) > 0 && runeLen(lines[len(lines)-1])+3+runeLen(item) <= width {
			lines[len(lines)-1] += "   " + item
			continue
		}
		line := ""
		for _, word := range words {
			switch {
			case line == "":
				line = word
			case runeLen(line)+1+runeLen(word) <= width:
				line += " " + word
			default:
				lines = append(lines, line)
				line = word
			}
		}
		lines = append(lines, line)
	}
	return lines
}

func runeLen(s string) int { return len([]rune(s)) }

// pad right-pads s with spaces to width runes.
func pad(s string, width int) string {
	if n := runeLen(s); n < width {
		return s + strings.Repeat(" ", width-n)
	}
	return s
}

func (t *textWriter) header() {
	p := t.p
	t.printf("lockstep plan: PodCliqueSet %s\n", p.Name)
	t.field("revisions", fmt.Sprintf("%s (old) → %s (new)", p.FromRevision.Name, p.ToRevision.Name))
	from, to := p.From.DesiredReplicas(), p.To.DesiredReplicas()
	reps := plural(int(to), "PodCliqueSet replica")
	if from != to {
		reps = fmt.Sprintf("%d → %d PodCliqueSet replicas (scaled in place, not rolled)", from, to)
	}
	t.field("replicas", reps)
	t.field("strategy", p.strategyText())
	if st := p.To.UpdateStrategy.RoleUpgrade; st != nil && p.strategy() == v1alpha1.RollingUpdateStrategyType {
		var steps []string
		for i, s := range st.Steps {
			steps = append(steps, fmt.Sprintf("%d. %s", i+1, p.stepText(s)))
		}
		t.field("steps", strings.Join(steps, "   "))
	}
	if g := p.gatesText(); g != "" {
		t.field("gates", g)
	}
	t.field("simulated", p.simulatedText())
	t.field("faults", p.faultsText())
	t.printf("\n")
	t.roleTable()
}

func (p *Plan) strategyText() string {
	s := p.To
	var text string
	switch p.strategy() {
	case v1alpha1.ReplicaRecreateStrategyType:
		u, sg := s.UpdateStrategy.RollingUpdate.Limits()
		text = fmt.Sprintf("ReplicaRecreate: whole PodCliqueSet replicas are deleted and recreated, "+
			"at most %s unavailable and %s extra at once", limitText(u, s.DesiredReplicas(), limit.Down), limitText(sg, s.DesiredReplicas(), limit.Up))
	case v1alpha1.OnDeleteStrategyType:
		text = "OnDelete: nothing is deleted for an update; a unit moves to the new revision " +
			"only when someone deletes it"
	default:
		text = "RollingUpdate: one PodCliqueSet replica at a time; inside it, "
		if s.UpdateStrategy.RoleUpgrade != nil {
			text += "roles update in the order of the steps below"
		} else {
			text += "every role replaces its units on its own, within its limits"
		}
	}
	if ru := s.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil && *ru.Partition > 0 {
		text += fmt.Sprintf("; partition %d: replicas below %d keep the old revision", *ru.Partition, *ru.Partition)
	}
	if s.Paused {
		text += "; paused: no unit changes revision until it is resumed"
	}
	return text
}

// limitText renders a maxUnavailable or maxSurge, with its count when it is a
// percentage.
func limitText(v intstr.IntOrString, of int32, r limit.Rounding) string {
	if !limit.IsPercent(v) {
		return v.String()
	}
	n, err := limit.Resolve(v, of, r)
	if err != nil {
		return v.String()
	}
	return fmt.Sprintf("%s (%d)", v.String(), n)
}

func (p *Plan) stepText(s v1alpha1.RoleUpgradeStep) string {
	text := fmt.Sprintf("%s → %s", s.Role, s.UpdateTo.String())
	if r := p.role(s.Role); r != nil && limit.IsPercent(s.UpdateTo) {
		if n, err := rollout.ResolveUpdateTo(s.UpdateTo, r.Units); err == nil {
			text += fmt.Sprintf(" (%d)", n)
		}
	}
	return text
}

func (p *Plan) simulatedText() string {
	startup := "pods become ready " + p.Startup.String()
	if p.Jitter > 0 {
		startup += fmt.Sprintf(" ± %s", percent(p.Jitter))
	}
	startup += fmt.Sprintf(" after they are created (seed %d); ", p.Seed)
	if p.Grace > 0 {
		return startup + "deleted pods take " + p.Grace.String() + " to go away"
	}
	return startup + "deleted pods go away at once"
}

func percent(f float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", f*100), "0"), ".") + "%"
}

func (p *Plan) faultsText() string {
	if len(p.Faults) == 0 {
		return "none"
	}
	var parts []string
	for _, f := range p.Faults {
		parts = append(parts, fmt.Sprintf("the %s unit created for %s never becomes ready", ordinal(f.After), f.Role))
	}
	return strings.Join(parts, "; ")
}

func (t *textWriter) roleTable() {
	p := t.p
	rolling := p.strategy() == v1alpha1.RollingUpdateStrategyType
	rows := [][]string{{"role", "units per replica", "maxUnavailable/Surge", "template"}}
	for _, r := range p.Roles {
		units := fmt.Sprintf("%d", r.Units)
		if r.FromUnits != r.Units {
			units = fmt.Sprintf("%d → %d", r.FromUnits, r.Units)
		}
		if r.Group {
			units += fmt.Sprintf(" × %d-pod group", r.PodsPerUnit)
		} else {
			units += " pods"
		}
		lim := "—"
		if rolling {
			lim = limitText(r.MaxUnavailable, r.Units, limit.Down) + " / " + limitText(r.MaxSurge, r.Units, limit.Up)
		}
		tpl := "unchanged"
		if r.Changed() {
			tpl = "changed"
			if len(r.ChangedMembers) > 0 {
				tpl += ": " + strings.Join(r.ChangedMembers, ", ")
			} else if r.Group {
				tpl += ": group shape"
			}
		}
		rows = append(rows, []string{r.Name, units, lim, tpl})
	}
	t.table(rows)
}

// table prints rows with aligned columns, indented by two spaces.
func (t *textWriter) table(rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, c := range row {
			widths[i] = max(widths[i], runeLen(c))
		}
	}
	for _, row := range rows {
		line := " "
		for i, c := range row {
			if i < len(row)-1 {
				c = pad(c, widths[i])
			}
			line += " " + c + " "
		}
		t.printf("%s\n", strings.TrimRight(line, " "))
	}
}

// A row is one line of the timeline before its time is formatted.
type row struct {
	at     time.Duration
	header bool // a section header: no time
	text   string
}

// timeline prints one line per entry (the time only on the first line of an
// instant), a header whenever the rollout moves to another PodCliqueSet replica
// or role step, and after every instant the roles whose counts changed.
func (t *textWriter) timeline() {
	p := t.p
	rows := t.rows()
	var times []time.Duration
	for _, r := range rows {
		if !r.header {
			times = append(times, r.at)
		}
	}
	clock := newClock(times)
	t.printf("\n")
	legend := fmt.Sprintf("%s of simulated time; unit names leave out the prefix \"%s-<replica>-\"", clock.legend(), p.Name)
	for i, line := range wrap(legend, lineWidth-11) {
		label := "Timeline"
		if i > 0 {
			label = ""
		}
		t.printf("%-11s%s\n", label, line)
	}
	t.printf("%-11s%s\n", "", "↳ a role's units over all replicas: on the new revision (updated), and available")
	timeW := len("start")
	for _, at := range times {
		timeW = max(timeW, runeLen(clock.format(at)))
	}
	blank := strings.Repeat(" ", timeW)
	label := pad("start", timeW)
	for _, line := range wrapJoined(t.p.progress(simulate.Sample{}, t.p.initial()), " · ", lineWidth-timeW-6) {
		t.printf("  %s  ↳ %s\n", label, line)
		label = blank
	}
	for i, r := range rows {
		label := blank
		if !r.header && (i == 0 || rows[i-1].header || rows[i-1].at != r.at) {
			label = clock.format(r.at)
		}
		if r.header {
			t.printf("  %s  ── %s\n", blank, r.text)
			continue
		}
		t.printf("  %s  %s\n", pad(label, timeW), r.text)
	}
	if len(p.Result.Timeline) == 0 {
		t.printf("  %s  no actions: nothing is created or deleted\n", blank)
	}
}

// rows lays out the timeline: entries with section headers, and the progress of
// the roles after every instant at which their counts changed.
func (t *textWriter) rows() []row {
	p := t.p
	entries := p.entries()
	samples := p.Result.Samples
	unitW, revW := 0, 0
	for _, e := range entries {
		unitW = max(unitW, runeLen(e.unitText()))
		revW = max(revW, runeLen(e.revText()))
	}
	steps := p.newStepper()
	rolling := p.strategy() == v1alpha1.RollingUpdateStrategyType
	lastHeader := ""
	shown := p.initial()
	var rows []row
	for ei, si := 0, 0; ei < len(entries) || si < len(samples); {
		at := samples[min(si, len(samples)-1)].At
		if ei < len(entries) && (si >= len(samples) || entries[ei].at <= samples[si].At) {
			at = entries[ei].at
		}
		for ; ei < len(entries) && entries[ei].at == at; ei++ {
			e := entries[ei]
			if h := t.sectionHeader(e, steps, rolling); h != "" && h != lastHeader {
				lastHeader = h
				rows = append(rows, row{at: at, header: true, text: h})
			}
			rows = append(rows, row{at: at, text: strings.TrimRight(fmt.Sprintf("replica %d  %s  %-7s  %s  %s",
				e.replica, pad(e.unitText(), unitW), e.op, pad(e.revText(), revW), e.notes()), " ")})
		}
		for ; si < len(samples) && samples[si].At == at; si++ {
			changes := p.progress(shown, samples[si])
			shown = samples[si]
			for _, line := range wrapJoined(changes, " · ", lineWidth-16) {
				rows = append(rows, row{at: at, text: "↳ " + line})
			}
		}
	}
	return rows
}

// sectionHeader names the PodCliqueSet replica, and the role step, an entry of
// a RollingUpdate belongs to ("" when it starts no update).
func (t *textWriter) sectionHeader(e entry, steps *stepper, rolling bool) string {
	if !rolling || e.level == simulate.LevelPodCliqueSet {
		return ""
	}
	if steps == nil {
		if e.updates() {
			return fmt.Sprintf("replica %d", e.replica)
		}
		return ""
	}
	i := steps.step(e)
	switch {
	case i < 0:
		return ""
	case i == len(steps.steps):
		return fmt.Sprintf("replica %d, after the steps", e.replica)
	}
	return fmt.Sprintf("replica %d, step %d: %s", e.replica, i+1, t.p.stepText(steps.steps[i]))
}

// wrapJoined joins parts with sep into lines of at most width runes.
func wrapJoined(parts []string, sep string, width int) []string {
	var lines []string
	line := ""
	for _, part := range parts {
		switch {
		case line == "":
			line = part
		case runeLen(line)+runeLen(sep)+runeLen(part) <= width:
			line += sep + part
		default:
			lines = append(lines, line)
			line = part
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// progress describes the roles whose counts differ between two samples.
func (p *Plan) progress(prev, cur simulate.Sample) []string {
	var out []string
	for _, rs := range cur.Roles {
		if old, ok := sampleOf(prev, rs.Role); ok && old == rs {
			continue
		}
		total := int32(0)
		if r := p.role(rs.Role); r != nil {
			total = p.total(r)
		}
		out = append(out, fmt.Sprintf("%s %d/%d updated, %d/%d available", rs.Role, rs.Updated, total, rs.Available, total))
	}
	return out
}

func sampleOf(s simulate.Sample, role string) (simulate.RoleSample, bool) {
	for _, rs := range s.Roles {
		if rs.Role == role {
			return rs, true
		}
	}
	return simulate.RoleSample{}, false
}

func (e entry) unitText() string {
	if e.level == simulate.LevelPodCliqueSet {
		return "whole replica"
	}
	return e.unit
}

func (e entry) revText() string {
	switch e.op {
	case "replace":
		return e.from + " → " + e.to
	case "create":
		return e.to
	}
	return e.from
}

func (e entry) notes() string {
	var notes []string
	if e.surge {
		notes = append(notes, "surge")
	}
	if e.level != simulate.LevelPodClique && e.pods > 0 {
		notes = append(notes, fmt.Sprintf("%d pods", e.pods))
	}
	switch e.reason {
	case rollout.ReasonReplaceFailed:
		notes = append(notes, "old unit was already unavailable")
	case rollout.ReasonScaleIn:
		notes = append(notes, "scale-in")
	case rollout.ReasonSurgeCleanup:
		notes = append(notes, "surge no longer needed")
	case rollout.ReasonSuperseded:
		notes = append(notes, "its surge pod took the index over")
	}
	if e.byHand {
		notes = append(notes, "by hand")
	}
	if e.fault != nil {
		notes = append(notes, fmt.Sprintf("✗ never ready (fault: %s #%d)", e.fault.Role, e.fault.After))
	}
	return strings.Join(notes, ", ")
}

// clock formats simulated times as [h:]mm:ss, with tenths of a second when whole
// seconds would merge distinct instants.
type clock struct{ tenths, hours bool }

func newClock(times []time.Duration) clock {
	var c clock
	seen := map[string]time.Duration{}
	for _, d := range times {
		c.hours = c.hours || d >= time.Hour
	}
	for _, d := range times {
		label := c.format(d)
		if prev, ok := seen[label]; ok && prev != d {
			c.tenths = true
		}
		seen[label] = d
	}
	return c
}

func (c clock) legend() string {
	switch {
	case c.hours && c.tenths:
		return "h:mm:ss.s"
	case c.hours:
		return "h:mm:ss"
	case c.tenths:
		return "mm:ss.s"
	}
	return "mm:ss"
}

func (c clock) format(d time.Duration) string {
	unit := time.Second
	if c.tenths {
		unit = 100 * time.Millisecond
	}
	d = d.Round(unit)
	h, m := int(d/time.Hour), int(d/time.Minute)%60
	s := d % time.Minute
	sec := fmt.Sprintf("%02d", int(s/time.Second))
	if c.tenths {
		sec = fmt.Sprintf("%04.1f", s.Seconds())
	}
	if c.hours {
		return fmt.Sprintf("%d:%02d:%s", h, m, sec)
	}
	return fmt.Sprintf("%02d:%s", m+60*h, sec)
}

func (t *textWriter) result() {
	p := t.p
	res := p.Result
	out := res.Outcome
	t.printf("\n")
	switch out.Kind {
	case simulate.Complete:
		t.printf("Result: Complete. %s\n", p.completeText())
	case simulate.Stuck:
		t.printf("Result: Stuck. %s\n", out.Reason)
		for _, line := range wrap(p.stuckText(), lineWidth-2) {
			t.printf("  %s\n", line)
		}
	default:
		t.printf("Result: Violation. %s\n", out.Reason)
		t.printf("  The planner broke a rollout invariant: this is a bug in Lockstep; please report it.\n")
	}
	sum := res.Summary
	settled := time.Duration(0)
	if n := len(res.Samples); n > 0 {
		settled = res.Samples[n-1].At
	}
	c := clock{hours: settled >= time.Hour}
	t.printf("\n")
	end := "the last unit became ready at " + c.format(settled)
	if out.Kind != simulate.Complete {
		end = "nothing changed after " + c.format(settled)
	}
	t.field("duration", fmt.Sprintf("%s until the last action (at %s); %s", roundDuration(sum.Duration),
		c.format(sum.Duration), end))
	t.field("peak pods", fmt.Sprintf("%d at once (%d before the update, %d after)", sum.PeakPods,
		p.pods(p.From), p.pods(p.To)))
	var mins []string
	for _, f := range sum.MinAvailable {
		total := int32(0)
		if r := p.role(f.Role); r != nil {
			total = p.total(r)
		}
		mins = append(mins, fmt.Sprintf("%s %d/%d", f.Role, f.Value, total))
	}
	t.field("min available", strings.Join(mins, ", ")+"   (the fewest units of each role available at once)")
	var mixed []string
	for _, m := range sum.MixedRevisionMoments {
		mixed = append(mixed, fmt.Sprintf("replica %d: %d", m.Replica, m.Value))
	}
	t.field("mixed revisions", strings.Join(mixed, ", ")+
		"   (simulated moments at which the replica ran pods of two revisions)")
	t.field("planner", plural(sum.Steps, "pass")+", "+plural(len(res.Timeline), "action"))
}

func (p *Plan) stuckText() string {
	var text string
	if p.Explained() {
		var broken []string
		for i, f := range p.faultHits() {
			a := p.Result.Timeline[i]
			broken = append(broken, fmt.Sprintf("%s in replica %d (the %s %s unit created)",
				p.entryOf(a).unitText(), a.Replica, ordinal(f.After), f.Role))
		}
		sort.Strings(broken)
		text = fmt.Sprintf("The stall is explained by the injected %s: %s never becomes ready, so the "+
			"rollout waits for it, as it would in a cluster.", pluralWord(p.Result.Outcome.FaultsFired, "fault"),
			strings.Join(broken, " and "))
		if p.strategy() == v1alpha1.RollingUpdateStrategyType {
			text += " The replicas after it keep the old revision."
		}
		return text
	}
	switch {
	case p.AtGate():
		text = "The rollout waits at a gate for an approval this simulation was not given: in a cluster " +
			"`kubectl lockstep approve` moves it on; here --approve GATE@TIME plays one."
	case p.To.Paused:
		text = "The new spec is paused: nothing changes revision until it is resumed."
	case p.strategy() == v1alpha1.OnDeleteStrategyType:
		text = "OnDelete never deletes for an update: the old units stay until someone deletes them."
	default:
		text = "Nothing could move and no injected fault explains it."
	}
	return text
}

// pods counts the pods of a spec.
func (p *Plan) pods(spec *v1alpha1.PodCliqueSetSpec) int32 {
	n := int32(0)
	tpl := &spec.Template
	for _, c := range tpl.Cliques {
		if g := tpl.ScalingGroupOf(c.Name); g != nil {
			n += c.Replicas * g.Replicas
		} else {
			n += c.Replicas
		}
	}
	return n * spec.DesiredReplicas()
}

func pluralWord(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}

// plural renders n with noun, in the plural unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "s") {
		return fmt.Sprintf("%d %ses", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func roundDuration(d time.Duration) time.Duration {
	if d >= time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}

// completeText says what a complete rollout left running: every unit on the new
// revision, or, held at a partition, the replicas from the partition up.
func (p *Plan) completeText() string {
	if p.Result.Outcome.RolledBack {
		return fmt.Sprintf("Rolled back: a gate's analysis failed (onFailure: Rollback); every unit runs %s again.", p.FromRevision.Name)
	}
	ru := p.To.UpdateStrategy.RollingUpdate
	if ru == nil || ru.Partition == nil || *ru.Partition == 0 {
		return fmt.Sprintf("Every unit runs %s.", p.ToRevision.Name)
	}
	part := *ru.Partition
	if part >= p.To.DesiredReplicas() {
		return fmt.Sprintf("Held at partition %d: every replica keeps %s; lower the partition to update.", part, p.FromRevision.Name)
	}
	return fmt.Sprintf("Held at partition %d: replicas %d and up run %s, replicas below %d keep %s; lower the partition to go on.",
		part, part, p.ToRevision.Name, part, p.FromRevision.Name)
}

// gatesText says where the gates are and when the simulation approves them;
// "" without gates.
func (p *Plan) gatesText() string {
	what := func(g *v1alpha1.Gate) string {
		var checks []string
		if g.SoakSeconds > 0 {
			checks = append(checks, fmt.Sprintf("soak %s", time.Duration(g.SoakSeconds)*time.Second))
		}
		if g.Analysis != nil {
			checks = append(checks, "analysis")
		}
		if g.Approval {
			checks = append(checks, "approval")
		}
		if len(checks) == 0 {
			return "nothing"
		}
		return strings.Join(checks, " then ")
	}
	var parts []string
	if g := p.To.UpdateStrategy.Gate; g != nil {
		parts = append(parts, "after each replica: "+what(g))
	}
	if ru := p.To.UpdateStrategy.RoleUpgrade; ru != nil {
		for i, st := range ru.Steps {
			if st.Gate != nil {
				parts = append(parts, fmt.Sprintf("after step %d: %s", i+1, what(st.Gate)))
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	var approved []string
	for _, a := range p.Approvals {
		approved = append(approved, fmt.Sprintf("%s at %s", a.Gate, roundDuration(a.At)))
	}
	var measured []string
	for _, a := range p.Analyses {
		measured = append(measured, fmt.Sprintf("%s %s at %s", a.Gate, a.Phase, roundDuration(a.At)))
	}
	text := strings.Join(parts, "; ")
	if len(measured) > 0 {
		text += "; analyses: " + strings.Join(measured, ", ")
	} else if strings.Contains(text, "analysis") {
		text += "; no analysis result given (--analysis)"
	}
	if len(approved) > 0 {
		text += "; approved: " + strings.Join(approved, ", ")
	} else if strings.Contains(text, "approval") {
		text += "; no approval given (--approve)"
	}
	return text
}
