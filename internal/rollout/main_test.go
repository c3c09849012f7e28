package rollout

import (
	"testing"

	"github.com/lockstep-dev/lockstep/internal/proptest"
)

// TestMain runs each property test with 2000 cases (see internal/proptest).
func TestMain(m *testing.M) { proptest.Main(m, 2000) }
