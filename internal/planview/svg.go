package planview

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/internal/simulate"
)

// SVG layout, in pixels.
const (
	svgWidth     = 960
	svgLeft      = 120 // role names and count ticks
	svgRight     = 30
	svgTop       = 92 // title and legend
	svgBottom    = 48 // time ticks
	svgPanel     = 110
	svgPanelGap  = 30
	colAvailable = "#2b6cb0"
	colUpdated   = "#dd6b20"
	colDesired   = "#718096"
	colFault     = "#c53030"
)

// WriteSVG draws the available and updated units of every role over simulated
// time: one panel per role, each a <g class="series" id="series-ROLE"> holding a
// step-shaped path per measure, with a shared time axis and a legend.
func WriteSVG(w io.Writer, p *Plan) error {
	c := newChart(p)
	var b bytes.Buffer
	c.draw(&b)
	_, err := w.Write(b.Bytes())
	return err
}

type chart struct {
	p        *Plan
	samples  []simulate.Sample // the initial state first
	t0, t1   time.Duration     // time domain
	plotW    float64
	height   int
	settled  time.Duration
	outcome  simulate.Outcome
	duration time.Duration
}

func newChart(p *Plan) *chart {
	c := &chart{p: p, samples: append([]simulate.Sample{p.initial()}, p.Result.Samples...),
		outcome: p.Result.Outcome, duration: p.Result.Summary.Duration}
	if n := len(p.Result.Samples); n > 0 {
		c.settled = p.Result.Samples[n-1].At
	}
	end := max(c.settled, c.duration)
	if end <= 0 {
		end = 10 * time.Second
	}
	margin := end / 25
	c.t0, c.t1 = -margin, end+margin
	c.plotW = float64(svgWidth - svgLeft - svgRight)
	n := len(p.Roles)
	c.height = svgTop + n*svgPanel + max(n-1, 0)*svgPanelGap + svgBottom
	return c
}

func (c *chart) x(t time.Duration) float64 {
	return float64(svgLeft) + float64(t-c.t0)/float64(c.t1-c.t0)*c.plotW
}

func (c *chart) panelTop(i int) float64 {
	return float64(svgTop + i*(svgPanel+svgPanelGap))
}

// esc escapes s for XML text and attribute values.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func (c *chart) draw(b *bytes.Buffer) {
	p := c.p
	fmt.Fprintf(b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" `+
		`font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">`+"\n",
		svgWidth, c.height, svgWidth, c.height)
	fmt.Fprintf(b, "<title>%s</title>\n", esc(c.title()))
	fmt.Fprintf(b, `<rect width="100%%" height="100%%" fill="#ffffff"/>`+"\n")
	fmt.Fprintf(b, `<text x="%d" y="24" font-size="15" font-weight="bold">%s</text>`+"\n", svgLeft, esc(c.title()))
	fmt.Fprintf(b, `<text x="%d" y="44" fill="#4a5568">%s</text>`+"\n", svgLeft, esc(c.subtitle()))
	c.legend(b)
	c.timeAxis(b)
	for i := range p.Roles {
		c.panel(b, i)
	}
	c.markers(b)
	fmt.Fprintf(b, "</svg>\n")
}

func (c *chart) title() string {
	p := c.p
	return fmt.Sprintf("%s: %s → %s", p.Name, shortRevision(p.Name, p.FromRevision.Name), shortRevision(p.Name, p.ToRevision.Name))
}

func (c *chart) subtitle() string {
	p := c.p
	s := fmt.Sprintf("%s, %s; pods ready after %s", p.strategy(), plural(int(p.To.DesiredReplicas()), "replica"), p.Startup)
	if p.Jitter > 0 {
		s += " ± " + percent(p.Jitter)
	}
	s += fmt.Sprintf(" (seed %d). ", p.Seed)
	switch c.outcome.Kind {
	case simulate.Complete:
		s += fmt.Sprintf("Complete: last action at %s.", clock{hours: c.duration >= time.Hour}.format(c.duration))
	case simulate.Stuck:
		s += "Stuck"
		if p.Explained() {
			s += " (explained by the injected fault)"
		}
		s += "."
	default:
		s += "Violation: " + c.outcome.Reason
	}
	return s
}

// legend explains the three kinds of line.
func (c *chart) legend(b *bytes.Buffer) {
	y := 66
	x := svgLeft
	item := func(label, stroke, dash string, width float64) {
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="%g"%s/>`+"\n",
			x, y-4, x+28, y-4, stroke, width, dashAttr(dash))
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", x+34, y, esc(label))
		x += 34 + 7*len(label) + 28
	}
	fmt.Fprintf(b, `<g class="legend">`+"\n")
	item("available units", colAvailable, "", 3)
	item("updated units (new revision)", colUpdated, "7 4", 2)
	item("desired units", colDesired, "2 3", 1)
	if len(c.p.Faults) > 0 {
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", x+14, y-12, x+14, y+2, colFault)
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", x+22, y, "unit that never becomes ready (fault)")
	}
	fmt.Fprintf(b, "</g>\n")
}

func dashAttr(dash string) string {
	if dash == "" {
		return ""
	}
	return fmt.Sprintf(` stroke-dasharray="%s"`, dash)
}

// timeTicks picks a tick spacing that gives at most ten ticks.
func (c *chart) timeTicks() []time.Duration {
	span := c.t1 - c.t0
	steps := []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second,
		30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute,
		30 * time.Minute, time.Hour, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour}
	step := steps[len(steps)-1]
	for _, s := range steps {
		if span/s <= 10 {
			step = s
			break
		}
	}
	var ticks []time.Duration
	for t := time.Duration(0); t <= c.t1; t += step {
		ticks = append(ticks, t)
	}
	return ticks
}

// timeAxis draws vertical grid lines over every panel and the time labels below.
func (c *chart) timeAxis(b *bytes.Buffer) {
	n := len(c.p.Roles)
	top := c.panelTop(0)
	bottom := c.panelTop(max(n-1, 0)) + svgPanel
	hours := c.t1 >= time.Hour
	fmt.Fprintf(b, `<g class="time-axis" fill="#4a5568" text-anchor="middle">`+"\n")
	for _, t := range c.timeTicks() {
		x := c.x(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e2e8f0"/>`+"\n", x, top, x, bottom)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#4a5568"/>`+"\n", x, bottom, x, bottom+5)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", x, bottom+18, clock{hours: hours}.format(t))
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f">simulated time since the new spec was applied (%s)</text>`+"\n",
		float64(svgLeft)+c.plotW/2, bottom+38, clock{hours: hours}.legend())
	fmt.Fprintf(b, "</g>\n")
}

// panel draws one role: its axes, the desired count and the two step lines.
func (c *chart) panel(b *bytes.Buffer, i int) {
	p := c.p
	r := p.Roles[i]
	top := c.panelTop(i)
	bottom := top + svgPanel
	desired := p.total(&r)
	yMax := max(desired, p.From.DesiredReplicas()*r.FromUnits, 1)
	for _, s := range c.samples {
		if rs, ok := sampleOf(s, r.Name); ok {
			yMax = max(yMax, rs.Available, rs.Updated)
		}
	}
	// leave room above the highest count
	scale := (svgPanel - 8) / float64(yMax)
	y := func(v int32) float64 { return bottom - float64(v)*scale }
	left, right := float64(svgLeft), float64(svgLeft)+c.plotW

	unit := "pods"
	if r.Group {
		unit = "group replicas"
	}
	fmt.Fprintf(b, `<g class="axes" data-role="%s">`+"\n", esc(r.Name))
	fmt.Fprintf(b, `<text x="12" y="%.1f" font-weight="bold" font-size="13">%s</text>`+"\n", top+14, esc(r.Name))
	fmt.Fprintf(b, `<text x="12" y="%.1f" fill="#4a5568" font-size="11">%s</text>`+"\n", top+29, esc(unit))
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#4a5568"/>`+"\n", left, top, left, bottom)
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#4a5568"/>`+"\n", left, bottom, right, bottom)
	for _, v := range countTicks(yMax, desired) {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#4a5568"/>`+"\n", left-5, y(v), left, y(v))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end" fill="#4a5568">%d</text>`+"\n", left-8, y(v)+4, v)
	}
	fmt.Fprintf(b, `<line class="desired" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="2 3"/>`+"\n",
		left, y(desired), right, y(desired), colDesired)
	fmt.Fprintf(b, "</g>\n")

	fmt.Fprintf(b, `<g class="series" id="series-%s" data-role="%s">`+"\n", esc(r.Name), esc(r.Name))
	fmt.Fprintf(b, "<title>%s: available and updated %s over all PodCliqueSet replicas</title>\n", esc(r.Name), unit)
	avail := c.steps(r.Name, func(rs simulate.RoleSample) int32 { return rs.Available }, y)
	upd := c.steps(r.Name, func(rs simulate.RoleSample) int32 { return rs.Updated }, y)
	fmt.Fprintf(b, `<path class="available" d="%s" fill="none" stroke="%s" stroke-width="3" stroke-opacity="0.85"/>`+"\n",
		avail, colAvailable)
	fmt.Fprintf(b, `<path class="updated" d="%s" fill="none" stroke="%s" stroke-width="2" stroke-dasharray="7 4"/>`+"\n",
		upd, colUpdated)
	fmt.Fprintf(b, "</g>\n")
}

// steps is the path of one measure: it holds each value until the next sample
// and changes at that instant.
func (c *chart) steps(role string, measure func(simulate.RoleSample) int32, y func(int32) float64) string {
	var d strings.Builder
	first := true
	for _, s := range c.samples {
		rs, ok := sampleOf(s, role)
		if !ok {
			continue
		}
		v := y(measure(rs))
		if first {
			fmt.Fprintf(&d, "M%.1f %.1f", c.x(c.t0), v)
			first = false
			continue
		}
		fmt.Fprintf(&d, " H%.1f V%.1f", c.x(s.At), v)
	}
	fmt.Fprintf(&d, " H%.1f", c.x(c.t1))
	return d.String()
}

// countTicks labels 0, the desired count and the highest count, and fills in
// round values between them when they are far apart.
func countTicks(yMax, desired int32) []int32 {
	step := int32(1)
	for i := 0; yMax/step > 4; i++ {
		step = []int32{1, 2, 5}[(i+1)%3] * pow10(int32((i+1)/3))
	}
	ticks := []int32{0}
	gap := step/2 + 1
	for v := step; v < yMax; v += step {
		if absDiff(v, desired) >= gap && absDiff(v, yMax) >= gap {
			ticks = append(ticks, v)
		}
	}
	ticks = append(ticks, desired)
	if yMax != desired {
		ticks = append(ticks, yMax)
	}
	return ticks
}

func pow10(n int32) int32 {
	p := int32(1)
	for range n {
		p *= 10
	}
	return p
}

func absDiff(a, b int32) int32 {
	if a > b {
		return a - b
	}
	return b - a
}

// markers draws a line where the new spec is applied, where the run ended, and
// where an injected fault broke a unit.
func (c *chart) markers(b *bytes.Buffer) {
	n := len(c.p.Roles)
	top := c.panelTop(0) - 6
	bottom := c.panelTop(max(n-1, 0)) + svgPanel
	fmt.Fprintf(b, `<g class="markers" font-size="11">`+"\n")
	x0 := c.x(0)
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#1a202c" stroke-dasharray="4 3"/>`+"\n", x0, top, x0, bottom)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f">new spec</text>`+"\n", x0+4, top+2)
	end, label := c.settled, "settled"
	switch c.outcome.Kind {
	case simulate.Stuck:
		label = "stuck"
	case simulate.Violation:
		label = "violation"
	}
	if end > 0 {
		xe := c.x(end)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#1a202c" stroke-dasharray="4 3"/>`+"\n", xe, top, xe, bottom)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", xe-4, top+2, label)
	}
	for i, f := range c.p.faultHits() {
		a := c.p.Result.Timeline[i]
		role := a.Role
		if a.Group != "" {
			role = a.Group
		}
		for j := range c.p.Roles {
			if c.p.Roles[j].Name != role {
				continue
			}
			pt := c.panelTop(j)
			x := c.x(a.At)
			fmt.Fprintf(b, `<line class="fault" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n",
				x, pt, x, pt+svgPanel, colFault)
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" fill="%s" stroke="#ffffff" stroke-width="4" paint-order="stroke">%s</text>`+"\n", x+4, pt+12, colFault,
				esc(fmt.Sprintf("replica %d %s never ready (fault %s #%d)", a.Replica, c.p.entryOf(a).unitText(), f.Role, f.After)))
		}
	}
	fmt.Fprintf(b, "</g>\n")
}
