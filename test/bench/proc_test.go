package bench

import "testing"

func TestBusyCPU_CountsNeitherIdleNorGuestTime(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice
	got, err := busyCPU("cpu  100 5 50 1000 20 3 2 1 7 4\ncpu0 50 2 25 500 10 1 1 0 3 2\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := 1.61; got != want {
		t.Fatalf("busy CPU = %v s, want %v s (user, nice, system, irq, softirq and steal)", got, want)
	}
	if _, err := busyCPU("intr 1 2 3\n"); err == nil {
		t.Fatal("a /proc/stat without its cpu line was read")
	}
}

func TestMachineCPU_ReadsThisMachine(t *testing.T) {
	busy, err := MachineCPU()
	if err != nil {
		t.Fatal(err)
	}
	if busy <= 0 {
		t.Fatalf("the machine has been busy %v s since boot", busy)
	}
}
