package gate

import (
	"math"
	"testing"
)

func TestParseCondition(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Condition
	}{
		{"result < 0.01", Condition{Index: 0, Op: "<", Value: 0.01}},
		{"result[2]>=3", Condition{Index: 2, Op: ">=", Value: 3}},
		{" result != -1e3 ", Condition{Index: 0, Op: "!=", Value: -1000}},
		{"result == .5", Condition{Index: 0, Op: "==", Value: 0.5}},
	} {
		got, err := ParseCondition(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "result", "result < x", "result[0] < 1 && true", "len(result) > 0", "result[-1] < 1",
		"result[1000] < 1", "result <> 1", "os.Exit(1)", "result < 1; rm -rf /"} {
		if _, err := ParseCondition(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestConditionMet(t *testing.T) {
	lt := Condition{Op: "<", Value: 0.01}
	if met, v, ok := lt.Met([]float64{0.001, 5}); !met || v != 0.001 || !ok {
		t.Errorf("0.001 < 0.01: met %v v %v ok %v", met, v, ok)
	}
	if met, _, ok := lt.Met([]float64{0.2}); met || !ok {
		t.Errorf("0.2 < 0.01 met")
	}
	if _, _, ok := lt.Met(nil); ok {
		t.Error("an empty result compared")
	}
	if _, _, ok := lt.Met([]float64{math.NaN()}); ok {
		t.Error("NaN compared")
	}
	second := Condition{Index: 1, Op: ">=", Value: 5}
	if met, _, ok := second.Met([]float64{0, 5}); !met || !ok {
		t.Error("result[1] >= 5 not met by 5")
	}
	if _, _, ok := second.Met([]float64{0}); ok {
		t.Error("result[1] of one sample compared")
	}
}
