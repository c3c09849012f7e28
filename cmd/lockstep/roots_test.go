package main

import (
	"crypto/x509"
	"os"
	"os/exec"
	"testing"
)

// TestRootCAs_PresentWithoutSystemBundle runs itself again with the system's
// CA files hidden (as in the image) and checks the process still has roots.
func TestRootCAs_PresentWithoutSystemBundle(t *testing.T) {
	if os.Getenv("LOCKSTEP_ROOTS_CHILD") == "1" {
		pool, err := x509.SystemCertPool()
		if err != nil {
			t.Fatalf("SystemCertPool: %v", err)
		}
		if pool.Equal(x509.NewCertPool()) {
			t.Fatal("no root CAs without the system bundle")
		}
		return
	}
	empty := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRootCAs_PresentWithoutSystemBundle$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LOCKSTEP_ROOTS_CHILD=1", "SSL_CERT_FILE="+empty+"/none.pem", "SSL_CERT_DIR="+empty)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("with no system CA files: %v\n%s", err, out)
	}
}
