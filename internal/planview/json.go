package planview

import (
	"encoding/json"
	"io"
	"math"
	"time"

	"github.com/lockstep-dev/lockstep/internal/simulate"
)

// Document is the JSON form of a plan. Times are seconds of simulated time since
// the new spec was applied, as numbers with millisecond precision.
type Document struct {
	Spec    SpecDoc     `json:"spec"`
	Actions []ActionDoc `json:"actions"`
	Result  ResultDoc   `json:"result"`
	Summary SummaryDoc  `json:"summary"`
	// Samples are the counts behind the SVG: per instant, per role, the available
	// and updated units over all PodCliqueSet replicas.
	Samples []SampleDoc `json:"samples"`
}

// SpecDoc says what was simulated.
type SpecDoc struct {
	Name         string `json:"name"`
	Strategy     string `json:"strategy"`
	FromReplicas int32  `json:"fromReplicas"`
	Replicas     int32  `json:"replicas"`
	FromRevision string `json:"fromRevision"`
	ToRevision   string `json:"toRevision"`
	// Roles are the standalone cliques and scaling groups, with their template
	// revisions and units per PodCliqueSet replica.
	Roles          []RoleDoc  `json:"roles"`
	StartupSeconds float64    `json:"startupSeconds"`
	Jitter         float64    `json:"jitter"`
	Seed           uint64     `json:"seed"`
	GraceSeconds   float64    `json:"graceSeconds"`
	Faults         []FaultDoc `json:"faults"`
}

// RoleDoc is one role of the PodCliqueSet.
type RoleDoc struct {
	Name string `json:"name"`
	// Kind is "clique" (units are pods) or "scalingGroup" (units are group replicas).
	Kind         string `json:"kind"`
	FromUnits    int32  `json:"fromUnits"`
	Units        int32  `json:"units"`
	PodsPerUnit  int32  `json:"podsPerUnit"`
	FromRevision string `json:"fromRevision"`
	ToRevision   string `json:"toRevision"`
	Changed      bool   `json:"changed"`
}

// FaultDoc is one injected fault: the After-th unit created for Role never
// becomes ready.
type FaultDoc struct {
	Role  string `json:"role"`
	After int    `json:"after"`
}

// ActionDoc is one create or delete.
type ActionDoc struct {
	AtSeconds float64 `json:"atSeconds"`
	// Level is podcliqueset, podcliquescalinggroup or podclique.
	Level string `json:"level"`
	// Replica is the PodCliqueSet replica index.
	Replica int32 `json:"replica"`
	// Role is the clique or scaling group ("" for a whole PodCliqueSet replica).
	Role string `json:"role"`
	// Group and GroupReplica locate a pod of a clique inside a scaling group.
	Group        string `json:"group,omitempty"`
	GroupReplica *int32 `json:"groupReplica,omitempty"`
	// Index is the unit's index at its level.
	Index int32 `json:"index"`
	// Op is create or delete.
	Op string `json:"op"`
	// From is the revision of a deleted unit, To that of a created one.
	From  string `json:"from,omitempty"`
	To    string `json:"to,omitempty"`
	Surge bool   `json:"surge"`
	// Reason says why a unit is deleted: update, replace-failed, scale-in,
	// surge-cleanup or superseded.
	Reason string `json:"reason,omitempty"`
	// NeverReady marks the create an injected fault broke.
	NeverReady bool `json:"neverReady,omitempty"`
}

// ResultDoc is how the simulation ended.
type ResultDoc struct {
	// Kind is Complete, Stuck or Violation.
	Kind string `json:"kind"`
	// Reason says why a run is Stuck or which invariant a Violation broke.
	Reason      string `json:"reason,omitempty"`
	FaultsFired int    `json:"faultsFired"`
	// Explained is true when a Stuck run is explained by injected faults.
	Explained bool `json:"explained"`
	// ExitCode is what `lockstep plan` exits with.
	ExitCode int `json:"exitCode"`
}

// SummaryDoc holds the figures of the run.
type SummaryDoc struct {
	// DurationSeconds is the time of the last action.
	DurationSeconds float64 `json:"durationSeconds"`
	// SettledSeconds is the time of the last change of any count.
	SettledSeconds float64 `json:"settledSeconds"`
	// Steps is the number of planner passes.
	Steps    int `json:"steps"`
	PeakPods int `json:"peakPods"`
	// MinAvailable is, per role, the fewest available units over all replicas.
	MinAvailable []simulate.RoleFigure `json:"minAvailable"`
	// MixedRevisionMoments counts, per PodCliqueSet replica, the simulated
	// moments at which it ran pods of two revisions.
	MixedRevisionMoments []simulate.ReplicaFigure `json:"mixedRevisionMoments"`
}

// SampleDoc is the state of every role at one instant.
type SampleDoc struct {
	AtSeconds float64               `json:"atSeconds"`
	Roles     []simulate.RoleSample `json:"roles"`
}

// NewDocument builds the JSON form of p.
func NewDocument(p *Plan) Document {
	d := Document{
		Spec: SpecDoc{Name: p.Name, Strategy: string(p.strategy()), FromReplicas: p.From.DesiredReplicas(), Replicas: p.To.DesiredReplicas(),
			FromRevision: p.FromRevision.Name, ToRevision: p.ToRevision.Name,
			StartupSeconds: seconds(p.Startup), Jitter: p.Jitter, Seed: p.Seed, GraceSeconds: seconds(p.Grace),
			Roles: []RoleDoc{}, Faults: []FaultDoc{}},
		Actions: []ActionDoc{},
		Samples: []SampleDoc{},
	}
	for _, r := range p.Roles {
		kind := "clique"
		if r.Group {
			kind = "scalingGroup"
		}
		d.Spec.Roles = append(d.Spec.Roles, RoleDoc{Name: r.Name, Kind: kind, FromUnits: r.FromUnits, Units: r.Units,
			PodsPerUnit: r.PodsPerUnit, FromRevision: r.FromRevision, ToRevision: r.ToRevision, Changed: r.Changed()})
	}
	for _, f := range p.Faults {
		d.Spec.Faults = append(d.Spec.Faults, FaultDoc{Role: f.Role, After: f.After})
	}
	hits := p.faultHits()
	for i, a := range p.Result.Timeline {
		ad := ActionDoc{AtSeconds: seconds(a.At), Level: string(a.Level), Replica: a.Replica, Role: a.Role,
			Index: a.Index, Op: string(a.Op), From: a.From, To: a.To, Surge: a.Surge, Reason: string(a.Reason)}
		if a.Group != "" {
			gr := a.GroupReplica
			ad.Group, ad.GroupReplica = a.Group, &gr
		}
		if a.ByHand {
			ad.Reason = "by-hand"
		}
		_, ad.NeverReady = hits[i]
		d.Actions = append(d.Actions, ad)
	}
	out := p.Result.Outcome
	d.Result = ResultDoc{Kind: string(out.Kind), Reason: out.Reason, FaultsFired: out.FaultsFired,
		Explained: p.Explained(), ExitCode: p.ExitCode()}
	sum := p.Result.Summary
	d.Summary = SummaryDoc{DurationSeconds: seconds(sum.Duration), Steps: sum.Steps, PeakPods: sum.PeakPods,
		MinAvailable: sum.MinAvailable, MixedRevisionMoments: sum.MixedRevisionMoments}
	if d.Summary.MinAvailable == nil {
		d.Summary.MinAvailable = []simulate.RoleFigure{}
	}
	if d.Summary.MixedRevisionMoments == nil {
		d.Summary.MixedRevisionMoments = []simulate.ReplicaFigure{}
	}
	for _, s := range p.Result.Samples {
		d.Samples = append(d.Samples, SampleDoc{AtSeconds: seconds(s.At), Roles: s.Roles})
	}
	if n := len(p.Result.Samples); n > 0 {
		d.Summary.SettledSeconds = seconds(p.Result.Samples[n-1].At)
	}
	return d
}

// WriteJSON writes the JSON form of p, indented, followed by a newline.
func WriteJSON(w io.Writer, p *Plan) error {
	return WriteDocument(w, NewDocument(p))
}

// WriteDocument writes d, indented, followed by a newline.
func WriteDocument(w io.Writer, d Document) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(d)
}

// seconds renders a duration as seconds with millisecond precision.
func seconds(d time.Duration) float64 {
	return math.Round(d.Seconds()*1000) / 1000
}
