package align

import (
	"testing"

	"github.com/lockstep-dev/lockstep/internal/proptest"
)

// TestMain runs each property test with 1000 cases (see internal/proptest).
func TestMain(m *testing.M) { proptest.Main(m, 1000) }
