package slowstart

import (
	"errors"
	"sync"
	"testing"

	"pgregory.net/rapid"
)

// Every call runs once while no call fails; batches double from one; after a
// failing batch no call starts; the errors come back in the order of i.
func TestRun_DoublesBatchesAndStopsAfterAFailingOne(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 100).Draw(t, "n")
		failing := rapid.SliceOfDistinct(rapid.IntRange(0, max(n-1, 0)), rapid.ID).Draw(t, "failing")
		fails := map[int]bool{}
		for _, i := range failing {
			if i < n {
				fails[i] = true
			}
		}
		var mu sync.Mutex
		called := map[int]int{}
		ran, err := Run(n, func(i int) error {
			mu.Lock()
			called[i]++
			mu.Unlock()
			if fails[i] {
				return errors.New("call failed")
			}
			return nil
		})
		// the batches are [0,1), [1,3), [3,7), …: the run ends with the first
		// batch holding a failing call, or at n
		want, failed := 0, 0
		for size := 1; want < n; size *= 2 {
			end := min(want+size, n)
			for i := want; i < end; i++ {
				if fails[i] {
					failed++
				}
			}
			want = end
			if failed > 0 {
				break
			}
		}
		if ran != want {
			t.Fatalf("ran %d calls, want %d", ran, want)
		}
		for i := range n {
			if c := called[i]; (i < want && c != 1) || (i >= want && c != 0) {
				t.Fatalf("call %d made %d times (ran %d)", i, c, ran)
			}
		}
		var joined interface{ Unwrap() []error }
		switch {
		case failed == 0 && err != nil:
			t.Fatalf("no call failed, yet err = %v", err)
		case failed > 0 && (!errors.As(err, &joined) || len(joined.Unwrap()) != failed):
			t.Fatalf("%d calls failed, err = %v", failed, err)
		}
	})
}

// Calls of one batch run side by side: a batch of two whose calls each wait
// for the other finishes.
func TestRun_CallsOfABatchRunSideBySide(t *testing.T) {
	var both sync.WaitGroup
	both.Add(2)
	ran, err := Run(3, func(i int) error {
		if i > 0 { // the second batch: calls 1 and 2
			both.Done()
			both.Wait()
		}
		return nil
	})
	if ran != 3 || err != nil {
		t.Fatalf("ran %d, err %v", ran, err)
	}
}
