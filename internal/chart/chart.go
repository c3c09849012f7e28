// Package chart draws stacked panels of step lines over a shared axis as one
// SVG: the fleet plan's waves and the dashboard picture use it. Each panel is a
// <g class="series" id="series-NAME">, each line a <path> with its class, so
// the file is easy to restyle or read back.
package chart

import (
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
)

// Layout, in pixels.
const (
	width       = 960
	left        = 150
	right       = 30
	top         = 80
	bottom      = 48
	panelHeight = 90
	panelGap    = 26
)

// Colours of the usual measures.
const (
	Blue   = "#2b6cb0"
	Orange = "#dd6b20"
	Grey   = "#718096"
	Green  = "#2f855a"
	Red    = "#c53030"
)

// Point is one value from X on, until the next point.
type Point struct{ X, Y float64 }

// Line is one measure of a panel.
type Line struct {
	// Class names the line in the SVG (available, updated, ...).
	Class  string
	Colour string
	// Dash is an SVG stroke-dasharray ("" for solid).
	Dash   string
	Width  float64
	Points []Point
}

// Panel is one stacked chart with its own Y axis.
type Panel struct {
	Name, Note string
	Lines      []Line
	// Marks are labelled Y values drawn as dotted reference lines.
	Marks []float64
}

// Legend explains a line style.
type Legend struct {
	Label, Colour, Dash string
	Width               float64
}

// Chart is the whole picture.
type Chart struct {
	Title, Subtitle string
	Legend          []Legend
	Panels          []Panel
	// XMin and XMax bound the shared axis; XLabel names it and XTick prints a
	// tick's value.
	XMin, XMax float64
	XLabel     string
	XTick      func(float64) string
}

// Write draws c.
func (c Chart) Write(w io.Writer) error {
	var b strings.Builder
	height := top + len(c.Panels)*(panelHeight+panelGap) + bottom
	plotW := float64(width - left - right)
	span := c.XMax - c.XMin
	if span <= 0 {
		span = 1
	}
	x := func(v float64) float64 { return float64(left) + (v-c.XMin)/span*plotW }
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	fmt.Fprintf(&b, "<title>%s</title>\n", esc(c.Title))
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="#ffffff"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="15" font-weight="bold">%s</text>`+"\n", left, esc(c.Title))
	fmt.Fprintf(&b, `<text x="%d" y="44" fill="#4a5568">%s</text>`+"\n", left, esc(c.Subtitle))
	lx := left
	fmt.Fprintf(&b, `<g class="legend">`)
	for _, l := range c.Legend {
		fmt.Fprintf(&b, `<line x1="%d" y1="60" x2="%d" y2="60" stroke="%s" stroke-width="%g"%s/><text x="%d" y="64">%s</text>`,
			lx, lx+28, l.Colour, max(l.Width, 1), dash(l.Dash), lx+34, esc(l.Label))
		lx += 34 + 7*len(l.Label) + 24
	}
	fmt.Fprintf(&b, "</g>\n")
	for i, p := range c.Panels {
		pTop := float64(top + i*(panelHeight+panelGap))
		pBottom := pTop + panelHeight
		yMax := 1.0
		for _, m := range p.Marks {
			yMax = math.Max(yMax, m)
		}
		for _, l := range p.Lines {
			for _, pt := range l.Points {
				yMax = math.Max(yMax, pt.Y)
			}
		}
		y := func(v float64) float64 { return pBottom - v*(panelHeight-6)/yMax }
		fmt.Fprintf(&b, `<g class="series" id="series-%s">`+"\n", esc(p.Name))
		fmt.Fprintf(&b, `<text x="12" y="%.1f" font-weight="bold" font-size="13">%s</text>`+"\n", pTop+14, esc(p.Name))
		fmt.Fprintf(&b, `<text x="12" y="%.1f" fill="#4a5568" font-size="11">%s</text>`+"\n", pTop+29, esc(p.Note))
		fmt.Fprintf(&b, `<path d="M%d %.1f V%.1f H%.1f" fill="none" stroke="#4a5568"/>`+"\n", left, pTop, pBottom, x(c.XMax))
		labels := map[float64]bool{0: true, yMax: true}
		for _, m := range p.Marks {
			labels[m] = true
			fmt.Fprintf(&b, `<line class="mark" x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="2 3"/>`+"\n", left, y(m), x(c.XMax), y(m), Grey)
		}
		for _, v := range slices.Sorted(maps.Keys(labels)) { // the same SVG every run
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#4a5568">%s</text>`+"\n", left-6, y(v)+4, trim(v))
		}
		for _, l := range p.Lines {
			fmt.Fprintf(&b, `<path class="%s" d="%s" fill="none" stroke="%s" stroke-width="%g"%s/>`+"\n",
				esc(l.Class), steps(l.Points, x, y, x(c.XMax)), l.Colour, max(l.Width, 1), dash(l.Dash))
		}
		fmt.Fprintf(&b, "</g>\n")
	}
	axis := float64(top + len(c.Panels)*(panelHeight+panelGap) - panelGap)
	fmt.Fprintf(&b, `<g class="x-axis" fill="#4a5568" text-anchor="middle">`+"\n")
	for i := 0; i <= 10; i++ {
		v := c.XMin + span*float64(i)/10
		label := trim(v)
		if c.XTick != nil {
			label = c.XTick(v)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", x(v), axis+18, esc(label))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", float64(left)+plotW/2, axis+38, esc(c.XLabel))
	fmt.Fprintf(&b, "</g>\n</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// steps is a step path: each value holds until the next point's X.
func steps(pts []Point, x, y func(float64) float64, end float64) string {
	var d strings.Builder
	for i, p := range pts {
		if i == 0 {
			fmt.Fprintf(&d, "M%.1f %.1f", x(p.X), y(p.Y))
		} else {
			fmt.Fprintf(&d, " H%.1f V%.1f", x(p.X), y(p.Y))
		}
	}
	if len(pts) > 0 {
		fmt.Fprintf(&d, " H%.1f", end)
	}
	return d.String()
}

func dash(d string) string {
	if d == "" {
		return ""
	}
	return fmt.Sprintf(` stroke-dasharray="%s"`, d)
}

func trim(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
