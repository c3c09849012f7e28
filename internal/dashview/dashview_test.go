package dashview

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// A panel per role, then the replicas and the progress; each line follows its
// series, and a series missing from a scrape reads 0.
func TestWrite_DrawsAPanelPerRoleFromTheSeries(t *testing.T) {
	key := func(metric, role string) string {
		if role == "" {
			return metric + `{namespace="ns",podcliqueset="pd"}`
		}
		return metric + `{namespace="ns",podcliqueset="pd",role="` + role + `"}`
	}
	samples := []Sample{
		{At: 0, Series: map[string]float64{key("lockstep_podcliqueset_role_units_desired", "decode"): 6, key("lockstep_podcliqueset_role_units_updated", "decode"): 0,
			key("lockstep_podcliqueset_role_units_desired", "prefill"): 4, key("lockstep_podcliqueset_replicas_desired", ""): 2}},
		{At: 2 * time.Second, Series: map[string]float64{key("lockstep_podcliqueset_role_units_desired", "decode"): 6, key("lockstep_podcliqueset_role_units_updated", "decode"): 3,
			key("lockstep_podcliqueset_role_step", "decode"): 1}},
	}
	var b bytes.Buffer
	if err := Write(&b, "pd", samples); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	for _, want := range []string{`id="series-decode"`, `id="series-prefill"`, `id="series-replicas"`, `id="series-progress"`, "2 scrapes"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the picture lacks %s", want)
		}
	}
	if got := roleNames(samples); strings.Join(got, ",") != "decode,prefill" {
		t.Fatalf("roles %v", got)
	}
	pts := points(samples, "lockstep_podcliqueset_role_units_updated", "decode")
	if len(pts) != 2 || pts[0].Y != 0 || pts[1].Y != 3 || pts[1].X != 2 {
		t.Fatalf("updated decode points %v, want 0 then 3 at 2 s", pts)
	}
	if v := last(samples, "lockstep_podcliqueset_role_units_desired", "prefill"); v != 4 {
		t.Fatalf("last desired prefill %v, want 4 (from the first scrape)", v)
	}
}
