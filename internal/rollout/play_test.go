package rollout

import "testing"

func TestPlayedAndSettled(t *testing.T) {
	units := []Unit{
		{Index: 0, Revision: "old", Scheduled: true, Ready: true, Available: true},
		{Index: 1, Revision: "old", Scheduled: true, Ready: true, Available: true},
	}
	plan := LevelPlan{
		Deletes: []Delete{{Index: 0, Reason: ReasonUpdate}},
		Creates: []Create{{Index: 2, Revision: "new", Surge: true}},
	}
	got := Played(units, plan)
	if len(got) != 3 || !got[0].Terminating || got[0].Available || got[0].Ready || got[1].Terminating {
		t.Fatalf("played: %+v", got)
	}
	if c := got[2]; c.Index != 2 || c.Revision != "new" || !c.Surge || !c.Scheduled || c.Ready || c.Available {
		t.Fatalf("created unit: %+v", c)
	}
	got = Settled(got)
	if len(got) != 2 || got[0].Index != 1 || got[1].Index != 2 || !got[1].Available || !got[1].Ready {
		t.Fatalf("settled: %+v", got)
	}
}
