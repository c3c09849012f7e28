package metatime

import (
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	if Ptr(time.Time{}) != nil || !Of(nil).IsZero() {
		t.Fatal("unset is not kept unset")
	}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if got := Of(Ptr(at)); !got.Equal(at) {
		t.Fatalf("%v came back as %v", at, got)
	}
}
