package member

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/align"
)

// Record is the hub's last decision for one member, as its member object
// carries it in the annotation fleet.lockstep.dev/grant. With the object's
// spec and status it is all a later round needs to decide from, so the
// workload's status can be lost without changing what the hub does next.
type Record struct {
	// Revision is the template revision (status.updateRevision) the grant was
	// decided for: a grant decided for another revision says nothing about
	// this one.
	Revision string
	// Share is the replicas the object was given (its spec.replicas as the
	// hub wrote it; an edit by someone else does not change the share).
	Share int32
	// Grant is the grant written, as the object holds it (align.Stored).
	Grant align.Grant
	// StillActing is the widest grant the member may still act on besides
	// Grant until its controller observes it (align.StillActing); nil when
	// Grant is all.
	StillActing *align.Grant
}

// RecordVersion is the version of the annotation's format this hub writes
// and reads.
const RecordVersion = 1

// recordJSON is the annotation's form: short, and readable in kubectl output.
type recordJSON struct {
	Version     int        `json:"v"`
	Revision    string     `json:"rev"`
	Share       int32      `json:"share"`
	Grant       grantJSON  `json:"grant"`
	StillActing *grantJSON `json:"stillActing,omitempty"`
}

type grantJSON struct {
	Started        bool  `json:"started,omitempty"`
	MaxUnavailable int32 `json:"maxUnavailable,omitempty"`
	MaxSurge       int32 `json:"maxSurge,omitempty"`
	Partition      int32 `json:"partition,omitempty"`
	Paused         bool  `json:"paused,omitempty"`
}

func toGrantJSON(g align.Grant) grantJSON {
	return grantJSON{Started: g.Started, MaxUnavailable: g.MaxUnavailable, MaxSurge: g.MaxSurge, Partition: g.Partition, Paused: g.Paused}
}

func (g grantJSON) grant() align.Grant {
	return align.Grant{Started: g.Started, MaxUnavailable: g.MaxUnavailable, MaxSurge: g.MaxSurge, Partition: g.Partition, Paused: g.Paused}
}

func (g grantJSON) valid() bool {
	return g.MaxUnavailable >= 0 && g.MaxSurge >= 0 && g.Partition >= 0
}

// Encode is the annotation's value for r.
func (r Record) Encode() string {
	out := recordJSON{Version: RecordVersion, Revision: r.Revision, Share: r.Share, Grant: toGrantJSON(r.Grant)}
	if r.StillActing != nil {
		a := toGrantJSON(*r.StillActing)
		out.StillActing = &a
	}
	data, _ := json.Marshal(out) // plain fields: cannot fail
	return string(data)
}

// DecodeRecord reads an annotation's value. It is false for a value that
// does not parse, is of another version or holds a negative number: such a
// value counts as no record.
func DecodeRecord(value string) (Record, bool) {
	var in recordJSON
	if err := json.Unmarshal([]byte(value), &in); err != nil || in.Version != RecordVersion {
		return Record{}, false
	}
	if in.Share < 0 || !in.Grant.valid() || (in.StillActing != nil && !in.StillActing.valid()) {
		return Record{}, false
	}
	r := Record{Revision: in.Revision, Share: in.Share, Grant: in.Grant.grant()}
	if in.StillActing != nil {
		a := in.StillActing.grant()
		r.StillActing = &a
	}
	return r, true
}

// SetRecord puts r on obj, an object about to be written.
func SetRecord(obj *unstructured.Unstructured, r Record) {
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[fleetv1alpha1.AnnotationGrant] = r.Encode()
	obj.SetAnnotations(ann)
}

// RecordOf is the record a member object carries; false when it carries
// none (written by a hub before records, or by hand) or one DecodeRecord
// refuses.
func RecordOf(obj *unstructured.Unstructured) (Record, bool) {
	value, ok := obj.GetAnnotations()[fleetv1alpha1.AnnotationGrant]
	if !ok {
		return Record{}, false
	}
	return DecodeRecord(value)
}

// SetRecordOver puts r on obj, the object about to be applied over held (nil
// when obj is to be created), unless obj changes nothing of held's spec nor
// of the template revision it holds: then held's record stays as it is, as
// long as it records the same share, and the same grant unless it was
// decided for another revision (a Deployment not started keeps its fields
// across a template change). What changes then is only what the member may
// still act on, or the revision of a grant it does not hold yet, and the
// record kept says as much or more: what it may still act on is what it
// could act on when its spec last changed. So a record is rewritten only
// with the spec it describes, and never changes a member object by itself: a
// Deployment counts a change of its annotations as a new generation, and
// would look stale to the hub until its controller had observed it.
func SetRecordOver(obj, held *unstructured.Unstructured, r Record) {
	if held != nil {
		value := held.GetAnnotations()[fleetv1alpha1.AnnotationGrant]
		old, ok := DecodeRecord(value)
		if ok && old.Share == r.Share && (old.Grant == r.Grant || old.Revision != r.Revision) && changesNothing(obj, held) {
			ann := obj.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			ann[fleetv1alpha1.AnnotationGrant] = value
			obj.SetAnnotations(ann)
			return
		}
	}
	SetRecord(obj, r)
}

// changesNothing: applied over held, obj changes neither its spec (every
// field obj sets holds the same value there; held may hold more, defaulted
// by its apiserver) nor the template revision it holds.
func changesNothing(obj, held *unstructured.Unstructured) bool {
	rev := fleetv1alpha1.AnnotationTemplateRevision
	return obj.GetAnnotations()[rev] == held.GetAnnotations()[rev] && within(obj.Object["spec"], held.Object["spec"])
}

// within: every field of want holds the same value in have; lists hold as
// many items, each within its counterpart.
func within(want, have any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if !within(v, h[k]) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !within(w[i], h[i]) {
				return false
			}
		}
		return true
	case int64, int32, int, float64:
		a, okA := number(w)
		b, okB := number(have)
		return okA && okB && a == b
	}
	return want == have
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case int:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}
