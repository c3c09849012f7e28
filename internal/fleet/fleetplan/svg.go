package fleetplan

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"
)

// Chart layout, in pixels, and colours (the same as the PodCliqueSet plan's).
const (
	chartWidth  = 960
	chartLeft   = 130
	chartRight  = 30
	chartTop    = 80
	chartBottom = 48
	panelHeight = 90
	panelGap    = 26
	colAvail    = "#2b6cb0"
	colUpdated  = "#dd6b20"
	colBound    = "#718096"
)

// series is one panel: a name, a reference line and two step lines over waves.
type series struct {
	name, note     string
	ref            int32 // the cluster's share, or the fleet's floor
	limit          int32 // the fleet's ceiling (0: none)
	avail, updated []int32
}

// WriteSVG draws the rollout wave by wave: the fleet's fewest available units
// against the floor, then each cluster's updated and available units against its
// share. Each panel is a <g class="series" id="series-NAME">.
func WriteSVG(w io.Writer, in Input, r Result) error {
	panels := []series{{name: "fleet", note: "all clusters", ref: r.Floor, limit: r.Ceiling}}
	for i, s := range r.Shares {
		p := series{name: s.Cluster, note: fmt.Sprintf("share %d", s.Units), ref: s.Units}
		for _, wv := range r.Waves {
			m := wv.Members[i]
			p.avail = append(p.avail, m.Available)
			p.updated = append(p.updated, m.Updated)
		}
		panels = append(panels, p)
	}
	for _, wv := range r.Waves {
		var upd int32
		for _, m := range wv.Members {
			upd += m.Updated
		}
		panels[0].avail = append(panels[0].avail, wv.Available)
		panels[0].updated = append(panels[0].updated, upd)
	}

	n := len(r.Waves)
	plotW := float64(chartWidth - chartLeft - chartRight)
	x := func(wave int) float64 { return float64(chartLeft) + float64(wave)/float64(max(n, 1))*plotW }
	height := chartTop + len(panels)*(panelHeight+panelGap) + chartBottom
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">`+"\n",
		chartWidth, height, chartWidth, height)
	title := fmt.Sprintf("FederatedWorkload %s: %d units over %d clusters", in.Workload.Name, in.Workload.Spec.Replicas, len(r.Shares))
	fmt.Fprintf(&b, "<title>%s</title>\n", esc(title))
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="#ffffff"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="15" font-weight="bold">%s</text>`+"\n", chartLeft, esc(title))
	fmt.Fprintf(&b, `<text x="%d" y="44" fill="#4a5568">%s</text>`+"\n", chartLeft, esc(strings.TrimSpace(r.summary(in))))
	fmt.Fprintf(&b, `<g class="legend"><line x1="%d" y1="60" x2="%d" y2="60" stroke="%s" stroke-width="3"/><text x="%d" y="64">available units</text>`+
		`<line x1="%d" y1="60" x2="%d" y2="60" stroke="%s" stroke-width="2" stroke-dasharray="7 4"/><text x="%d" y="64">updated units</text>`+
		`<line x1="%d" y1="60" x2="%d" y2="60" stroke="%s" stroke-dasharray="2 3"/><text x="%d" y="64">share, floor and ceiling</text></g>`+"\n",
		chartLeft, chartLeft+28, colAvail, chartLeft+34, chartLeft+160, chartLeft+188, colUpdated, chartLeft+194,
		chartLeft+310, chartLeft+338, colBound, chartLeft+344)
	for i, p := range panels {
		top := float64(chartTop + i*(panelHeight+panelGap))
		bottom := top + panelHeight
		yMax := max(p.ref, p.limit, 1)
		for j := range p.avail {
			yMax = max(yMax, p.avail[j], p.updated[j])
		}
		y := func(v int32) float64 { return bottom - float64(v)*(panelHeight-6)/float64(yMax) }
		fmt.Fprintf(&b, `<g class="series" id="series-%s">`+"\n", esc(p.name))
		fmt.Fprintf(&b, `<text x="12" y="%.1f" font-weight="bold" font-size="13">%s</text>`+"\n", top+14, esc(p.name))
		fmt.Fprintf(&b, `<text x="12" y="%.1f" fill="#4a5568" font-size="11">%s</text>`+"\n", top+29, esc(p.note))
		fmt.Fprintf(&b, `<path d="M%d %.1f V%.1f H%.1f" fill="none" stroke="#4a5568"/>`+"\n", chartLeft, top, bottom, x(n))
		for i, v := range []int32{0, p.ref, p.limit} {
			if i > 0 && (v == 0 || v == p.ref && i == 2) {
				continue
			}
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#4a5568">%d</text>`+"\n", chartLeft-6, y(v)+4, v)
		}
		for _, v := range []int32{p.ref, p.limit} {
			if v > 0 {
				fmt.Fprintf(&b, `<line class="bound" x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="2 3"/>`+"\n", chartLeft, y(v), x(n), y(v), colBound)
			}
		}
		fmt.Fprintf(&b, `<path class="available" d="%s" fill="none" stroke="%s" stroke-width="3" stroke-opacity="0.85"/>`+"\n", steps(p.avail, x, y), colAvail)
		fmt.Fprintf(&b, `<path class="updated" d="%s" fill="none" stroke="%s" stroke-width="2" stroke-dasharray="7 4"/>`+"\n", steps(p.updated, x, y), colUpdated)
		fmt.Fprintf(&b, "</g>\n")
	}
	axis := float64(chartTop + len(panels)*(panelHeight+panelGap) - panelGap)
	every := max(1, n/10)
	fmt.Fprintf(&b, `<g class="time-axis" fill="#4a5568" text-anchor="middle">`+"\n")
	for wv := 0; wv <= n; wv += every {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", x(wv), axis+18, time.Duration(wv)*in.Startup)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">simulated time (one wave = %s)</text>`+"\n", float64(chartLeft)+plotW/2, axis+38, in.Startup)
	fmt.Fprintf(&b, "</g>\n</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// steps is a step path: wave i's value holds from x(i) to x(i+1).
func steps(vs []int32, x func(int) float64, y func(int32) float64) string {
	var d strings.Builder
	for i, v := range vs {
		if i == 0 {
			fmt.Fprintf(&d, "M%.1f %.1f", x(0), y(v))
		} else {
			fmt.Fprintf(&d, " H%.1f V%.1f", x(i), y(v))
		}
	}
	if len(vs) > 0 {
		fmt.Fprintf(&d, " H%.1f", x(len(vs)))
	}
	return d.String()
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
