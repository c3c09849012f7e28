// Package metatime converts between the optional times of API status
// (*metav1.Time, nil for unset) and the planners' times (zero for unset).
package metatime

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Of is t's time, zero for nil.
func Of(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

// Ptr is t for a status field, nil for the zero time.
func Ptr(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	mt := metav1.NewTime(t)
	return &mt
}
