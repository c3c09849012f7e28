package gang

import (
	"fmt"
	"os"
	"testing"

	"github.com/lockstep-dev/lockstep/internal/testenv"
)

// env is a real kube-apiserver and etcd serving scheduling.k8s.io/v1alpha2,
// shared by the integration tests of this package. It has no scheduler and no
// kube-controller-manager: tests that need their effects write them.
var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if env, err = testenv.Start(testenv.Options{}); err != nil {
		// Failing, not skipping: a green run must have run these tests.
		fmt.Fprintf(os.Stderr, "gang: %v\n", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "gang: stopping envtest: %v\n", err)
		}
	}()
	return m.Run()
}
