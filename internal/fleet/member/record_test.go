package member

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"pgregory.net/rapid"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/align"
)

func drawGrant(t *rapid.T, label string) align.Grant {
	return align.Grant{
		Started:        rapid.Bool().Draw(t, label+" started"),
		MaxUnavailable: rapid.Int32Range(0, 1000).Draw(t, label+" maxUnavailable"),
		MaxSurge:       rapid.Int32Range(0, 1000).Draw(t, label+" maxSurge"),
		Partition:      rapid.Int32Range(0, 1000).Draw(t, label+" partition"),
		Paused:         rapid.Bool().Draw(t, label+" paused"),
	}
}

// Every record reads back as written, from the annotation of the object it
// was put on, next to the annotations the object had.
func TestRecord_ReadsBackAsWritten(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := Record{
			Revision: rapid.StringMatching(`[a-z0-9]{0,10}`).Draw(t, "revision"),
			Share:    rapid.Int32Range(0, 100000).Draw(t, "share"),
			Grant:    drawGrant(t, "grant"),
		}
		if rapid.Bool().Draw(t, "still acting") {
			a := drawGrant(t, "acting")
			r.StillActing = &a
		}
		obj := &unstructured.Unstructured{Object: map[string]any{}}
		obj.SetAnnotations(map[string]string{fleetv1alpha1.AnnotationTemplateRevision: "r1"})
		SetRecord(obj, r)
		got, ok := RecordOf(obj)
		if !ok || !equality.Semantic.DeepEqual(got, r) {
			t.Fatalf("wrote %+v as %q, read %+v (%v)", r, obj.GetAnnotations()[fleetv1alpha1.AnnotationGrant], got, ok)
		}
		if obj.GetAnnotations()[fleetv1alpha1.AnnotationTemplateRevision] != "r1" {
			t.Fatalf("another annotation was lost: %v", obj.GetAnnotations())
		}
	})
}

// The annotation is short JSON with its version; a value that does not
// parse, of another version or with a negative number is no record.
func TestRecord_EncodingAndWhatIsNoRecord(t *testing.T) {
	r := Record{Revision: "abc", Share: 4, Grant: align.Grant{Started: true, MaxUnavailable: 2, MaxSurge: 1}, StillActing: &align.Grant{Started: true, Partition: 3}}
	if got, want := r.Encode(), `{"v":1,"rev":"abc","share":4,"grant":{"started":true,"maxUnavailable":2,"maxSurge":1},"stillActing":{"started":true,"partition":3}}`; got != want {
		t.Errorf("encoded %s, want %s", got, want)
	}
	for _, bad := range []string{
		"", "not json", `{"rev":"abc","share":4,"grant":{}}`, `{"v":2,"rev":"abc","share":4,"grant":{}}`,
		`{"v":1,"share":-1,"grant":{}}`, `{"v":1,"share":1,"grant":{"partition":-1}}`, `{"v":1,"share":1,"grant":{},"stillActing":{"maxSurge":-2}}`,
		`{"v":1,"share":"4","grant":{}}`,
	} {
		if got, ok := DecodeRecord(bad); ok {
			t.Errorf("%q read as %+v", bad, got)
		}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	if _, ok := RecordOf(obj); ok {
		t.Error("an object without the annotation has a record")
	}
}

// What Build makes and SetRecord marks is what the round reads back: the
// record beside the grant the rollout fields hold.
func TestRecord_OnABuiltObject(t *testing.T) {
	tmpl, err := ParseTemplate([]byte(`{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"annotations":{"team":"web"}},"spec":{"template":{"spec":{"containers":[{"name":"c","image":"x:1"}]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	g := align.Grant{Started: true, Partition: 2}
	obj, err := Build(Object{Template: tmpl, Namespace: "shop", Name: "web", Replicas: 5, Grant: g})
	if err != nil {
		t.Fatal(err)
	}
	SetRecord(obj, Record{Revision: tmpl.Revision, Share: 5, Grant: g})
	rec, ok := RecordOf(obj)
	if !ok || rec.Share != 5 || rec.Grant != *HeldGrant(StatefulSet, obj, tmpl.Revision) || rec.Revision != tmpl.Revision {
		t.Errorf("record %+v (%v), held grant %+v", rec, ok, HeldGrant(StatefulSet, obj, tmpl.Revision))
	}
	if obj.GetAnnotations()["team"] != "web" || !strings.Contains(obj.GetAnnotations()[fleetv1alpha1.AnnotationGrant], `"share":5`) {
		t.Errorf("annotations %v", obj.GetAnnotations())
	}
}

// A record is rewritten only with the spec it describes: over an object
// whose spec and template revision the write leaves as they are, the record
// it holds stays (what the member may still act on is all that changed, or
// the revision of a grant a Deployment not started does not hold yet), so
// the write changes nothing and a Deployment's generation does not move.
func TestSetRecordOver_RewritesTheRecordOnlyWithTheSpec(t *testing.T) {
	tmpl, err := ParseTemplate([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":{"spec":{"containers":[{"name":"c","image":"x:1"}]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	g := align.Grant{Started: true, MaxUnavailable: 2, MaxSurge: 1}
	build := func(replicas int32, g align.Grant) *unstructured.Unstructured {
		obj, err := Build(Object{Template: tmpl, Namespace: "shop", Name: "web", Replicas: replicas, Grant: g})
		if err != nil {
			t.Fatal(err)
		}
		return obj
	}
	// held: as its apiserver returns it, defaults added
	held := build(4, g)
	SetRecord(held, Record{Revision: tmpl.Revision, Share: 4, Grant: g, StillActing: &align.Grant{Started: true, MaxUnavailable: 3}})
	_ = unstructured.SetNestedField(held.Object, int64(600), "spec", "progressDeadlineSeconds")
	containers, _, _ := unstructured.NestedSlice(held.Object, "spec", "template", "spec", "containers")
	containers[0].(map[string]any)["terminationMessagePolicy"] = "File"
	_ = unstructured.SetNestedSlice(held.Object, containers, "spec", "template", "spec", "containers")
	kept := held.GetAnnotations()[fleetv1alpha1.AnnotationGrant]

	cases := []struct {
		name  string
		obj   *unstructured.Unstructured
		r     Record
		keeps bool
	}{
		{"only what it may still act on changed", build(4, g), Record{Revision: tmpl.Revision, Share: 4, Grant: g}, true},
		{"the share changed", build(5, g), Record{Revision: tmpl.Revision, Share: 5, Grant: g}, false},
		{"the grant changed", build(4, align.Grant{Started: true, MaxUnavailable: 1}), Record{Revision: tmpl.Revision, Share: 4, Grant: align.Grant{Started: true, MaxUnavailable: 1}}, false},
		{"the record says another share than the spec", build(4, g), Record{Revision: tmpl.Revision, Share: 3, Grant: g}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			SetRecordOver(c.obj, held, c.r)
			got := c.obj.GetAnnotations()[fleetv1alpha1.AnnotationGrant]
			if (got == kept) != c.keeps {
				t.Errorf("record %s; held %s; want kept %v", got, kept, c.keeps)
			}
			if !c.keeps && got != c.r.Encode() {
				t.Errorf("record %s, want %s", got, c.r.Encode())
			}
		})
	}
	created := build(4, g)
	SetRecordOver(created, nil, Record{Revision: tmpl.Revision, Share: 4, Grant: g})
	if _, ok := RecordOf(created); !ok {
		t.Error("a created object carries no record")
	}
}
