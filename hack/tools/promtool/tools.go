//go:build tools

// Package tools pins promtool, which checks and unit-tests the chart's alerting
// rules. Prometheus needs newer Kubernetes libraries than the operator, so it
// lives in a module of its own.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
