package revision

import (
	"reflect"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// An operator upgrade that starts defaulting a field writes it into every stored
// PodCliqueSet; an upgrade that learns a new field reads it on every object. Neither
// may change a revision, or every workload rolls. These tests stand in for such an
// upgrade: a spec before and after Default(), with defaults omitted or written out,
// and every field outside the hashed form set to a value.

func pcsOf(s *v1alpha1.PodCliqueSetSpec) *v1alpha1.PodCliqueSet {
	p := &v1alpha1.PodCliqueSet{Spec: *s.DeepCopy()}
	p.Name = "disagg"
	return p
}

func TestDefaultNeverChangesARevision(t *testing.T) {
	cases := examplePodCliqueSets(t)
	cases["spec()"] = pcsOf(spec())
	recreate := spec()
	recreate.UpdateStrategy.Type = v1alpha1.ReplicaRecreateStrategyType
	cases["spec() under ReplicaRecreate"] = pcsOf(recreate)
	for key, pcs := range cases {
		t.Run(key, func(t *testing.T) {
			raw := revisionOf(t, pcs)
			pcs.Default()
			once := revisionOf(t, pcs)
			pcs.Default()
			twice := revisionOf(t, pcs)
			if !reflect.DeepEqual(raw, once) || !reflect.DeepEqual(once, twice) {
				t.Fatalf("Default() changed the revision: stored before defaulting %v, defaulted %v, defaulted twice %v; an upgrade that starts writing a default would roll the workload", raw, once, twice)
			}
		})
	}
}

func TestDefaultsWrittenOutKeepTheRevision(t *testing.T) {
	base := revisionOf(t, pcsOf(spec()))
	limits := func() *v1alpha1.ComponentUpdateStrategy {
		mu, ms := v1alpha1.DefaultMaxUnavailable, v1alpha1.DefaultMaxSurge
		return &v1alpha1.ComponentUpdateStrategy{MaxUnavailable: &mu, MaxSurge: &ms}
	}
	cases := map[string]func(*v1alpha1.PodCliqueSetSpec){
		"replicas": func(s *v1alpha1.PodCliqueSetSpec) { s.Replicas = ptr.To[int32](v1alpha1.DefaultReplicas) },
		"progressDeadlineSeconds": func(s *v1alpha1.PodCliqueSetSpec) {
			s.ProgressDeadlineSeconds = ptr.To[int32](v1alpha1.DefaultProgressDeadlineSeconds)
		},
		"revisionHistoryLimit": func(s *v1alpha1.PodCliqueSetSpec) {
			s.RevisionHistoryLimit = ptr.To[int32](v1alpha1.DefaultRevisionHistoryLimit)
		},
		"podReplacementPolicy":   func(s *v1alpha1.PodCliqueSetSpec) { s.PodReplacementPolicy = v1alpha1.TerminationStarted },
		"surgePlacement":         func(s *v1alpha1.PodCliqueSetSpec) { s.SurgePlacement = v1alpha1.AboveReplicas },
		"updateStrategy":         func(s *v1alpha1.PodCliqueSetSpec) { s.UpdateStrategy.Type = v1alpha1.RollingUpdateStrategyType },
		"updateStrategy synonym": func(s *v1alpha1.PodCliqueSetSpec) { s.UpdateStrategy.Type = v1alpha1.RollingRecreateStrategyType },
		"minAvailable of cliques (replicas)": func(s *v1alpha1.PodCliqueSetSpec) {
			for i := range s.Template.Cliques {
				s.Template.Cliques[i].MinAvailable = ptr.To(s.Template.Cliques[i].Replicas)
			}
		},
		"minAvailable of groups (1)": func(s *v1alpha1.PodCliqueSetSpec) {
			s.Template.PodCliqueScalingGroups[0].MinAvailable = ptr.To[int32](v1alpha1.DefaultScalingGroupMinAvail)
		},
		"clique and group limits": func(s *v1alpha1.PodCliqueSetSpec) {
			for i := range s.Template.Cliques {
				s.Template.Cliques[i].UpdateStrategy = limits()
			}
			s.Template.PodCliqueScalingGroups[0].UpdateStrategy = limits()
		},
		"peerDNS of every clique (Replica)": func(s *v1alpha1.PodCliqueSetSpec) {
			for i := range s.Template.Cliques {
				s.Template.Cliques[i].PeerDNS = v1alpha1.PeerDNSReplica
			}
		},
	}
	for name, write := range cases {
		t.Run(name, func(t *testing.T) {
			s := spec()
			s.Replicas = nil
			write(s)
			if got := revisionOf(t, pcsOf(s)); !reflect.DeepEqual(got, base) {
				t.Fatalf("writing out the default changed the revision: %v, omitted %v", got, base)
			}
		})
	}
}

func TestWhatDoesNotMatterForPods(t *testing.T) {
	base := revisionOf(t, pcsOf(spec()))
	cases := map[string]func(*v1alpha1.PodCliqueSetSpec){
		"replicas":                func(s *v1alpha1.PodCliqueSetSpec) { s.Replicas = ptr.To[int32](9) },
		"paused":                  func(s *v1alpha1.PodCliqueSetSpec) { s.Paused = true },
		"progressDeadlineSeconds": func(s *v1alpha1.PodCliqueSetSpec) { s.ProgressDeadlineSeconds = ptr.To[int32](30) },
		"revisionHistoryLimit":    func(s *v1alpha1.PodCliqueSetSpec) { s.RevisionHistoryLimit = ptr.To[int32](2) },
		"partition and PodCliqueSet limits": func(s *v1alpha1.PodCliqueSetSpec) {
			mu, ms := intstr.FromString("50%"), intstr.FromInt32(2)
			s.UpdateStrategy = v1alpha1.PodCliqueSetUpdateStrategy{Type: v1alpha1.ReplicaRecreateStrategyType,
				RollingUpdate: &v1alpha1.PodCliqueSetRollingUpdate{MaxUnavailable: &mu, MaxSurge: &ms, Partition: ptr.To[int32](1)}}
		},
		"clique and group limits": func(s *v1alpha1.PodCliqueSetSpec) {
			mu, ms := intstr.FromInt32(3), intstr.FromString("25%")
			for i := range s.Template.Cliques {
				s.Template.Cliques[i].UpdateStrategy = &v1alpha1.ComponentUpdateStrategy{MaxUnavailable: &mu, MaxSurge: &ms}
			}
			s.Template.PodCliqueScalingGroups[0].UpdateStrategy = &v1alpha1.ComponentUpdateStrategy{MaxUnavailable: &mu}
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			s := spec()
			change(s)
			if got := revisionOf(t, pcsOf(s)); !reflect.DeepEqual(got, base) {
				t.Fatalf("changed the revision: %v, was %v", got, base)
			}
		})
	}
	// peerDNS None takes the subdomain off the clique's pods, which a pod
	// cannot change: its pods are replaced, standalone or in a group.
	for clique, changed := range map[string][]string{"frontend": {"frontend"}, "decode-worker": {"decode-worker", "decode"}} {
		t.Run("peerDNS None of "+clique+" does", func(t *testing.T) {
			s := spec()
			s.Template.Clique(clique).PeerDNS = v1alpha1.PeerDNSNone
			got := revisionOf(t, pcsOf(s))
			if got.Name == base.Name {
				t.Fatalf("peerDNS None kept the revision %s", got.Name)
			}
			for role, h := range base.Roles {
				if (got.Roles[role] != h) != slices.Contains(changed, role) {
					t.Errorf("role %s's hash %s, was %s; want only %v changed", role, got.Roles[role], h, changed)
				}
			}
		})
	}
	t.Run("a pod template change does", func(t *testing.T) {
		s := spec()
		s.Template.Cliques[0].Template.Spec.Containers[0].Args = []string{"--port=8080"}
		if got := revisionOf(t, pcsOf(s)); got.Name == base.Name || got.Roles["frontend"] == base.Roles["frontend"] {
			t.Fatalf("a pod template change kept the revision %s", got.Name)
		}
	})
}

// TestEveryOtherFieldIsOutsideTheHash sets, one at a time, every field of the spec
// that is not in the canonical form, found by reflection: a field added to the API
// later is covered without touching this test, and must not change a revision
// whatever its value (in particular its default).
func TestEveryOtherFieldIsOutsideTheHash(t *testing.T) {
	base := revisionOf(t, pcsOf(spec()))
	check := func(t *testing.T, field string, mutate func(*v1alpha1.PodCliqueSetSpec)) {
		t.Run(field, func(t *testing.T) {
			s := spec()
			mutate(s)
			if got := revisionOf(t, pcsOf(s)); !reflect.DeepEqual(got, base) {
				t.Fatalf("setting %s changed the revision: %v, was %v; an upgrade that defaults it would roll every workload", field, got, base)
			}
		})
	}
	eachField(reflect.TypeFor[v1alpha1.PodCliqueSetSpec](), []string{"Template"}, func(i int, name string) {
		check(t, "spec."+name, func(s *v1alpha1.PodCliqueSetSpec) { setFilled(reflect.ValueOf(s).Elem().Field(i)) })
	})
	eachField(reflect.TypeFor[v1alpha1.PodCliqueSetTemplateSpec](), []string{"Cliques", "PodCliqueScalingGroups"}, func(i int, name string) {
		check(t, "template."+name, func(s *v1alpha1.PodCliqueSetSpec) { setFilled(reflect.ValueOf(&s.Template).Elem().Field(i)) })
	})
	// frontend (0) is standalone: only its pod template counts. decode-worker (2)
	// is in a group: its replicas and minAvailable shape the group too.
	// PeerDNS is in the hash when None (TestWhatDoesNotMatterForPods).
	eachField(reflect.TypeFor[v1alpha1.PodCliqueTemplateSpec](), []string{"Name", "Template", "PeerDNS"}, func(i int, name string) {
		check(t, "standalone clique."+name, func(s *v1alpha1.PodCliqueSetSpec) {
			setFilled(reflect.ValueOf(&s.Template.Cliques[0]).Elem().Field(i))
		})
	})
	eachField(reflect.TypeFor[v1alpha1.PodCliqueTemplateSpec](), []string{"Name", "Template", "Replicas", "MinAvailable", "PeerDNS"}, func(i int, name string) {
		check(t, "group member clique."+name, func(s *v1alpha1.PodCliqueSetSpec) {
			setFilled(reflect.ValueOf(&s.Template.Cliques[2]).Elem().Field(i))
		})
	})
	eachField(reflect.TypeFor[v1alpha1.PodCliqueScalingGroupConfig](), []string{"Name", "CliqueNames"}, func(i int, name string) {
		check(t, "scaling group."+name, func(s *v1alpha1.PodCliqueSetSpec) {
			setFilled(reflect.ValueOf(&s.Template.PodCliqueScalingGroups[0]).Elem().Field(i))
		})
	})
}

// eachField calls f with every exported field of struct type typ but those named
// in skip.
func eachField(typ reflect.Type, skip []string, f func(i int, name string)) {
	skipped := map[string]bool{}
	for _, s := range skip {
		skipped[s] = true
	}
	for i := range typ.NumField() {
		if sf := typ.Field(i); sf.IsExported() && !skipped[sf.Name] {
			f(i, sf.Name)
		}
	}
}

// setFilled sets v to a value of its type that differs from the zero value.
func setFilled(v reflect.Value) {
	n := reflect.New(v.Type()).Elem()
	fill(n, 0)
	v.Set(n)
}

// fill gives v (settable, zero) a non-zero value: the other-than-default a field
// may come to hold.
func fill(v reflect.Value, depth int) {
	if depth > 6 {
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(3)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(3)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(3)
	case reflect.String:
		v.SetString("x")
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, depth+1)
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Field(i).CanSet() {
				fill(v.Field(i), depth+1)
			}
		}
	}
}
