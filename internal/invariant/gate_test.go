package invariant

import (
	"testing"
	"time"
)

func TestCheckReplicaGates(t *testing.T) {
	for _, tc := range []struct {
		started  []int32
		wave     int32
		approved int
		broken   bool
	}{
		{started: nil, wave: 1},
		{started: []int32{0}, wave: 1},
		{started: []int32{0, 1}, wave: 1, broken: true},
		{started: []int32{0, 1}, wave: 1, approved: 1},
		{started: []int32{0, 1}, wave: 2},
		{started: []int32{0, 1, 2}, wave: 2, broken: true},
		{started: []int32{0, 1, 2}, wave: 1, approved: 1, broken: true},
	} {
		if got := CheckReplicaGates(tc.started, tc.wave, tc.approved); (len(got) > 0) != tc.broken {
			t.Errorf("%+v: %v", tc, got)
		}
	}
}

func TestCheckSoak(t *testing.T) {
	m := time.Minute
	for _, tc := range []struct {
		starts []time.Duration
		broken bool
	}{
		{starts: nil},
		{starts: []time.Duration{0, m, 3 * m}},
		{starts: []time.Duration{0, m, m + 59*time.Second}, broken: true},
	} {
		if got := CheckSoak(tc.starts, m); (len(got) > 0) != tc.broken {
			t.Errorf("%v: %v", tc.starts, got)
		}
	}
}
