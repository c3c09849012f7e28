package fleetplan

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/internal/chart"
)

// WriteSVG draws the rollout wave by wave: the fleet's fewest available units
// against the floor and ceiling, then each cluster's updated and available units
// against its share. Each panel is a <g class="series" id="series-NAME">.
func WriteSVG(w io.Writer, in Input, r Result) error {
	avail := func(i int, v int32) chart.Point { return chart.Point{X: float64(i), Y: float64(v)} }
	fleet := chart.Panel{Name: "fleet", Note: "all clusters", Marks: []float64{float64(r.Floor), float64(r.Ceiling)}}
	var fa, fu []chart.Point
	for i, wv := range r.Waves {
		var upd int32
		for _, m := range wv.Members {
			upd += m.Updated
		}
		fa, fu = append(fa, avail(i, wv.Available)), append(fu, avail(i, upd))
	}
	fleet.Lines = lines(fa, fu)
	panels := []chart.Panel{fleet}
	for i, s := range r.Shares {
		var a, u []chart.Point
		for j, wv := range r.Waves {
			a, u = append(a, avail(j, wv.Members[i].Available)), append(u, avail(j, wv.Members[i].Updated))
		}
		panels = append(panels, chart.Panel{Name: s.Cluster, Note: fmt.Sprintf("share %d", s.Units), Marks: []float64{float64(s.Units)}, Lines: lines(a, u)})
	}
	return chart.Chart{
		Title:    fmt.Sprintf("FederatedWorkload %s: %d units over %d clusters", in.Workload.Name, in.Workload.Spec.Replicas, len(r.Shares)),
		Subtitle: strings.SplitN(strings.TrimSpace(r.summary(in)), ";", 2)[0],
		Legend: []chart.Legend{{Label: "available units", Colour: chart.Blue, Width: 3}, {Label: "updated units", Colour: chart.Orange, Dash: "7 4", Width: 2},
			{Label: "share, floor and ceiling", Colour: chart.Grey, Dash: "2 3"}},
		Panels: panels,
		XMin:   0, XMax: float64(max(len(r.Waves), 1)),
		XLabel: fmt.Sprintf("simulated time (one wave = %s)", in.Startup),
		XTick:  func(v float64) string { return (time.Duration(v * float64(in.Startup))).Round(time.Second).String() },
	}.Write(w)
}

func lines(available, updated []chart.Point) []chart.Line {
	return []chart.Line{
		{Class: "available", Colour: chart.Blue, Width: 3, Points: available},
		{Class: "updated", Colour: chart.Orange, Dash: "7 4", Width: 2, Points: updated},
	}
}
