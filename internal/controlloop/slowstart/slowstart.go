// Package slowstart runs a pass's writes side by side, a few first: a wide
// rollout step's pods are created in a handful of round trips instead of one
// after another, and a pass whose writes all fail (a quota, a webhook that
// rejects the template) makes one request, not one per pod.
package slowstart

import (
	"errors"
	"sync"
)

// Run calls do(0) … do(n-1) in batches that run side by side: the first batch
// holds one call, and each batch after a batch without errors holds twice as
// many as the one before. After a batch with an error it starts no more
// calls. It returns how many calls were made and their errors, joined in the
// order of i.
func Run(n int, do func(i int) error) (int, error) {
	errs := make([]error, n)
	started := 0
	for size := 1; started < n; size *= 2 {
		batch := min(size, n-started)
		var wg sync.WaitGroup
		for i := started; i < started+batch; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = do(i)
			}()
		}
		wg.Wait()
		started += batch
		if err := errors.Join(errs[started-batch : started]...); err != nil {
			break
		}
	}
	return started, errors.Join(errs[:started]...)
}
