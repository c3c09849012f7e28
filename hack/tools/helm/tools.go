//go:build tools

// Package tools pins Helm, which the chart tests run. It is a module of its own
// so that its Kubernetes libraries never move the ones hack/tools pins for the
// control-plane binaries.
package tools

import (
	_ "helm.sh/helm/v4/cmd/helm"
)
