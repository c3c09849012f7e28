// Package dashview draws the dashboard's PodCliqueSet row from series scraped
// off the operator's /metrics during a real rollout: the picture in
// docs/observability.md, made without a Grafana.
package dashview

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/internal/chart"
)

// Sample is one scrape: every lockstep_podcliqueset_* series of one
// PodCliqueSet, keyed by its text up to the value
// (`lockstep_podcliqueset_role_units_updated{namespace="x",podcliqueset="y",role="decode"}`).
type Sample struct {
	At     time.Duration
	Series map[string]float64
}

// Write draws the samples of PodCliqueSet name: updated and available units per
// role against the desired count, the replicas updated, available and
// updating, and the role step with the seconds since the last progress.
func Write(w io.Writer, name string, samples []Sample) error {
	roles := roleNames(samples)
	var panels []chart.Panel
	for _, role := range roles {
		desired := last(samples, "lockstep_podcliqueset_role_units_desired", role)
		panels = append(panels, chart.Panel{
			Name: role, Note: "units (pods or group replicas)", Marks: []float64{desired},
			Lines: []chart.Line{
				{Class: "available", Colour: chart.Blue, Width: 3, Points: points(samples, "lockstep_podcliqueset_role_units_available", role)},
				{Class: "updated", Colour: chart.Orange, Dash: "7 4", Width: 2, Points: points(samples, "lockstep_podcliqueset_role_units_updated", role)},
			},
		})
	}
	panels = append(panels, chart.Panel{
		Name: "replicas", Note: "PodCliqueSet replicas", Marks: []float64{last(samples, "lockstep_podcliqueset_replicas_desired", "")},
		Lines: []chart.Line{
			{Class: "available", Colour: chart.Blue, Width: 3, Points: points(samples, "lockstep_podcliqueset_replicas_available", "")},
			{Class: "updated", Colour: chart.Orange, Dash: "7 4", Width: 2, Points: points(samples, "lockstep_podcliqueset_replicas_updated", "")},
			{Class: "updating", Colour: chart.Green, Width: 2, Points: points(samples, "lockstep_podcliqueset_replicas_updating", "")},
		},
	}, chart.Panel{
		Name: "progress", Note: "role step (index), s since progress",
		Lines: []chart.Line{
			{Class: "role-step", Colour: chart.Green, Width: 2, Points: points(samples, "lockstep_podcliqueset_role_step", "")},
			{Class: "since-progress", Colour: chart.Red, Dash: "3 3", Width: 1, Points: points(samples, "lockstep_podcliqueset_seconds_since_last_progress", "")},
		},
	})
	end := 1.0
	if n := len(samples); n > 0 {
		end = max(end, samples[n-1].At.Seconds())
	}
	return chart.Chart{
		Title:    fmt.Sprintf("PodCliqueSet %s: the dashboard's series during a rollout", name),
		Subtitle: fmt.Sprintf("%d scrapes of the operator's /metrics over %s", len(samples), time.Duration(end*float64(time.Second)).Round(time.Second)),
		Legend: []chart.Legend{{Label: "available", Colour: chart.Blue, Width: 3}, {Label: "updated", Colour: chart.Orange, Dash: "7 4", Width: 2},
			{Label: "updating replicas / role step", Colour: chart.Green, Width: 2}, {Label: "s since progress", Colour: chart.Red, Dash: "3 3"},
			{Label: "desired", Colour: chart.Grey, Dash: "2 3"}},
		Panels: panels,
		XMin:   0, XMax: end,
		XLabel: "seconds since the new template was applied",
	}.Write(w)
}

// roleNames are the roles the samples name, sorted.
func roleNames(samples []Sample) []string {
	seen := map[string]bool{}
	for _, s := range samples {
		for k := range s.Series {
			if strings.HasPrefix(k, "lockstep_podcliqueset_role_units_desired{") {
				if r := label(k, "role"); r != "" {
					seen[r] = true
				}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for r := range seen {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

// points are one series over the samples; a sample without it reads 0 (a
// series the operator reports only while something is under way).
func points(samples []Sample, metric, role string) []chart.Point {
	out := make([]chart.Point, 0, len(samples))
	for _, s := range samples {
		v, _ := value(s.Series, metric, role)
		out = append(out, chart.Point{X: s.At.Seconds(), Y: v})
	}
	return out
}

func last(samples []Sample, metric, role string) float64 {
	for i := len(samples) - 1; i >= 0; i-- {
		if v, ok := value(samples[i].Series, metric, role); ok {
			return v
		}
	}
	return 0
}

func value(series map[string]float64, metric, role string) (float64, bool) {
	for k, v := range series {
		if strings.HasPrefix(k, metric+"{") && (role == "" || label(k, "role") == role) {
			return v, true
		}
	}
	return 0, false
}

// label reads one label's value out of a series key.
func label(key, name string) string {
	i := strings.Index(key, name+`="`)
	if i < 0 {
		return ""
	}
	rest := key[i+len(name)+2:]
	if j := strings.IndexByte(rest, '"'); j >= 0 {
		return rest[:j]
	}
	return ""
}
