package limit_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"pgregory.net/rapid"

	"github.com/lockstep-dev/lockstep/api/limit"
)

func ios(s string) *intstr.IntOrString {
	v := intstr.Parse(s)
	return &v
}

func TestResolve(t *testing.T) {
	cases := []struct {
		v          string
		count      int32
		down, up   int32
		wantFailed bool
	}{
		{v: "3", count: 10, down: 3, up: 3},
		{v: "30", count: 10, down: 30, up: 30}, // an integer is taken as written
		{v: "0", count: 10, down: 0, up: 0},
		{v: "25%", count: 10, down: 2, up: 3},
		{v: "39%", count: 10, down: 3, up: 4},
		{v: "1%", count: 99, down: 0, up: 1},
		{v: "1%", count: 1000, down: 10, up: 10},
		{v: "100%", count: 7, down: 7, up: 7},
		{v: "0%", count: 7, down: 0, up: 0},
		{v: "150%", count: 10, down: 15, up: 15},
		{v: "33%", count: 3, down: 0, up: 1},
		{v: "67%", count: 3, down: 2, up: 3},
		{v: "05%", count: 20, down: 1, up: 1}, // leading zeros are a Deployment's syntax too
		{v: "50%", count: 0, down: 0, up: 0},
		{v: "50%", count: -4, down: 0, up: 0}, // a negative count counts as 0
		{v: "2147483647%", count: math.MaxInt32, down: math.MaxInt32, up: math.MaxInt32},
		{v: "-1", count: 10, wantFailed: true},
		{v: "-5%", count: 10, wantFailed: true},
		{v: "+5%", count: 10, wantFailed: true},
		{v: "abc", count: 10, wantFailed: true},
		{v: "%", count: 10, wantFailed: true},
		{v: "5 %", count: 10, wantFailed: true},
		{v: "2147483648%", count: 10, wantFailed: true},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s of %d", tc.v, tc.count), func(t *testing.T) {
			v := *ios(tc.v)
			down, errDown := limit.Resolve(v, tc.count, limit.Down)
			up, errUp := limit.Resolve(v, tc.count, limit.Up)
			if tc.wantFailed {
				if errDown == nil || errUp == nil {
					t.Fatalf("Resolve(%s) = %d, %d; want an error", tc.v, down, up)
				}
				return
			}
			if errDown != nil || errUp != nil {
				t.Fatalf("Resolve(%s): %v, %v", tc.v, errDown, errUp)
			}
			if down != tc.down || up != tc.up {
				t.Errorf("Resolve(%s of %d) = down %d, up %d; want %d, %d", tc.v, tc.count, down, up, tc.down, tc.up)
			}
		})
	}
}

func TestResolveBudget(t *testing.T) {
	cases := []struct {
		name        string
		mu, ms      *intstr.IntOrString
		replicas    int32
		unavailable int32
		surge       int32
	}{
		{"unset limits take the defaults", nil, nil, 5, limit.DefaultMaxUnavailable, limit.DefaultMaxSurge},
		{"unset maxUnavailable beside a surge is still 1", nil, ios("2"), 5, 1, 2},
		{"25% of 10: 2 unavailable, 3 surge", ios("25%"), ios("25%"), 10, 2, 3},
		{"both zero: 1 unavailable, as a Deployment", ios("0"), ios("0%"), 5, 1, 0},
		{"10% of 5 rounds to 0: 1 unavailable", ios("10%"), nil, 5, 1, 0},
		{"no replicas, percentages: a rollout can still move", ios("50%"), ios("50%"), 0, 1, 0},
		{"surge only", ios("0"), ios("1"), 3, 0, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := limit.ResolveBudget(tc.mu, tc.ms, tc.replicas)
			if err != nil {
				t.Fatal(err)
			}
			if b.MaxUnavailable != tc.unavailable || b.MaxSurge != tc.surge {
				t.Errorf("got %+v, want maxUnavailable %d, maxSurge %d", b, tc.unavailable, tc.surge)
			}
		})
	}
	for _, bad := range [][2]string{{"-1", "1"}, {"1", "ten%"}} {
		if _, err := limit.ResolveBudget(ios(bad[0]), ios(bad[1]), 3); err == nil {
			t.Errorf("ResolveBudget(%s, %s): want an error", bad[0], bad[1])
		}
	}
}

func TestIsZero(t *testing.T) {
	for v, want := range map[string]bool{"0": true, "0%": true, "00%": true, "1": false, "1%": false, "abc": false, "-0%": false} {
		if got := limit.IsZero(*ios(v)); got != want {
			t.Errorf("IsZero(%q) = %t, want %t", v, got, want)
		}
	}
}

// wantErr is one expected error: its field, its type and a part of its text
// ("" field: no error).
type wantErr struct {
	field, detail string
}

func checkErrs(t *testing.T, errs field.ErrorList, want []wantErr) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d: %v", len(errs), len(want), errs.ToAggregate())
	}
	for i, w := range want {
		if errs[i].Field != w.field || errs[i].Type != field.ErrorTypeInvalid || !strings.Contains(errs[i].Detail, w.detail) {
			t.Errorf("error %d = %v, want an Invalid error on %s saying %q", i, errs[i], w.field, w.detail)
		}
	}
}

func TestValidate(t *testing.T) {
	const mu, ms = "s.maxUnavailable", "s.maxSurge"
	cases := []struct {
		name     string
		mu, ms   *intstr.IntOrString
		replicas int32
		want     []wantErr
	}{
		{"unset limits are the defaults, 1 and 0", nil, nil, 3, nil},
		{"unset maxSurge is 0: both zero", ios("0"), nil, 3, []wantErr{{mu, "cannot both be 0"}}},
		{"unset maxUnavailable is 1: not both zero", nil, ios("0"), 3, nil},
		{"integers", ios("1"), ios("2"), 3, nil},
		{"percentages", ios("25%"), ios("25%"), 3, nil},
		{"maxUnavailable equal to replicas", ios("3"), ios("0"), 3, nil},
		{"maxUnavailable above replicas", ios("4"), ios("0"), 3, []wantErr{{mu, "must not exceed replicas (3)"}}},
		{"maxUnavailable above replicas when there are none", ios("1"), ios("0"), 0, nil},
		{"maxUnavailable 100%", ios("100%"), ios("0"), 3, nil},
		{"maxUnavailable 101%", ios("101%"), ios("0"), 3, []wantErr{{mu, "must not be more than 100%"}}},
		{"maxSurge 150%, as a Deployment's may", ios("0"), ios("150%"), 3, nil},
		{"maxSurge far above replicas", ios("0"), ios("40"), 3, nil},
		{"both 0", ios("0"), ios("0"), 3, []wantErr{{mu, "cannot both be 0"}}},
		{"both 0%", ios("0%"), ios("0%"), 3, []wantErr{{mu, "cannot both be 0"}}},
		{"a percentage that rounds to 0 is not 0", ios("10%"), ios("0"), 3, nil},
		{"negative maxUnavailable", ios("-1"), ios("1"), 3, []wantErr{{mu, "greater than or equal to 0"}}},
		{"negative maxSurge", ios("1"), ios("-1"), 3, []wantErr{{ms, "greater than or equal to 0"}}},
		{"a negative percentage", ios("1"), ios("-5%"), 3, []wantErr{{ms, "an integer or a percentage"}}},
		{"no number", ios("abc"), ios("1"), 3, []wantErr{{mu, `such as "25%"`}}},
		{"every error at once", ios("150%"), ios("x"), 3, []wantErr{{mu, "more than 100%"}, {ms, "an integer or a percentage"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkErrs(t, limit.Validate(field.NewPath("s"), tc.mu, tc.ms, tc.replicas), tc.want)
		})
	}
}

func TestValidateTarget(t *testing.T) {
	const p = "t"
	cases := []struct {
		v    string
		want []wantErr
	}{
		{"1", nil},
		{"7", nil},
		{"1%", nil},
		{"100%", nil},
		{"0", []wantErr{{p, "at least 1"}}},
		{"-3", []wantErr{{p, "at least 1"}}},
		{"0%", []wantErr{{p, "(0%, 100%]"}}},
		{"101%", []wantErr{{p, "(0%, 100%]"}}},
		{"050%", []wantErr{{p, "an integer or a percentage"}}},
		{"half", []wantErr{{p, "an integer or a percentage"}}},
	}
	for _, tc := range cases {
		t.Run(tc.v, func(t *testing.T) {
			checkErrs(t, limit.ValidateTarget(field.NewPath(p), *ios(tc.v)), tc.want)
		})
	}
}

// drawLimit draws a well-formed limit: an integer or a percentage up to 200%.
func drawLimit(t *rapid.T, label string) intstr.IntOrString {
	if rapid.Bool().Draw(t, label+" is a percentage") {
		return intstr.FromString(fmt.Sprintf("%d%%", rapid.IntRange(0, 200).Draw(t, label+" percent")))
	}
	return intstr.FromInt32(rapid.Int32Range(0, 1000).Draw(t, label))
}

func TestResolve_PercentagesUpTo100StayWithinTheCount(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pct := rapid.IntRange(0, 100).Draw(t, "percent")
		count := rapid.Int32Range(0, math.MaxInt32).Draw(t, "count")
		v := intstr.FromString(fmt.Sprintf("%d%%", pct))
		down, _ := limit.Resolve(v, count, limit.Down)
		up, _ := limit.Resolve(v, count, limit.Up)
		if down < 0 || up > count || down > up || up-down > 1 {
			t.Fatalf("%s of %d: down %d, up %d; want 0 ≤ down ≤ up ≤ count, up − down ≤ 1", v.String(), count, down, up)
		}
		if (pct > 0 && count > 0) != (up > 0) {
			t.Fatalf("%s of %d rounds up to %d: want at least 1 exactly when neither is 0", v.String(), count, up)
		}
	})
}

func TestResolve_MonotonicInTheCount(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := drawLimit(t, "limit")
		r := rapid.SampledFrom([]limit.Rounding{limit.Down, limit.Up}).Draw(t, "rounding")
		a := rapid.Int32Range(0, 1<<20).Draw(t, "count")
		b := a + rapid.Int32Range(0, 1<<20).Draw(t, "more")
		na, _ := limit.Resolve(v, a, r)
		nb, _ := limit.Resolve(v, b, r)
		if na > nb {
			t.Fatalf("%s: %d of %d but %d of %d", v.String(), na, a, nb, b)
		}
	})
}

// What Validate accepts always resolves, and what does not resolve is
// rejected: admission and the planners read a value the same way.
func TestValidate_AgreesWithResolve(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(
			rapid.StringMatching(`-?[0-9]{1,4}%?`),
			rapid.StringMatching(`[0-9a-z%+ -]{0,6}`),
		).Draw(t, "written")
		v := intstr.Parse(s)
		replicas := rapid.Int32Range(0, 20).Draw(t, "replicas")
		_, err := limit.Resolve(v, replicas, limit.Up)
		errs := limit.Validate(field.NewPath("s"), ptr(intstr.FromInt32(1)), &v, replicas)
		if (err == nil) != (len(errs) == 0) {
			t.Fatalf("maxSurge %q: Resolve error %v, Validate %v", s, err, errs.ToAggregate())
		}
		if len(errs) == 0 {
			if _, err := limit.ResolveBudget(ptr(intstr.FromInt32(1)), &v, replicas); err != nil {
				t.Fatalf("maxSurge %q is valid but its budget does not resolve: %v", s, err)
			}
		}
	})
}

func ptr(v intstr.IntOrString) *intstr.IntOrString { return &v }
