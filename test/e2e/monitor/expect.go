package monitor

import (
	"time"

	"k8s.io/apimachinery/pkg/labels"
)

// expectedDeletions are the pod deletions a test announced before making them,
// so that they are not taken for the operator's.
type expectedDeletions struct {
	items []expectedDeletion
}

// expectedDeletion covers one pod by name, or every pod matching a selector,
// among the pods that existed when it was announced (a replacement created
// afterwards is the operator's again).
type expectedDeletion struct {
	at       time.Time
	name     string
	selector labels.Selector
}

func (e *expectedDeletions) add(x expectedDeletion) {
	e.items = append(e.items, x)
}

// claim reports whether p's deletion was announced. A name is claimed once.
func (e *expectedDeletions) claim(p podState) bool {
	for i, x := range e.items {
		// creation times have second precision: a pod created in the second of
		// the announcement counts as existing then
		if p.Created.After(x.at) {
			continue
		}
		if x.name == p.Name {
			e.items = append(e.items[:i], e.items[i+1:]...)
			return true
		}
		if x.selector != nil && x.selector.Matches(labels.Set(p.Labels)) {
			return true
		}
	}
	return false
}
