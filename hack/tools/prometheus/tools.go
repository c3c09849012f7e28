//go:build tools

// Package tools pins the Prometheus server the e2e tests and the analysis
// tests run against: a real server scraping real targets, so that a gate's
// query is answered by Prometheus's own HTTP API. It shares promtool's
// version and lives in a module of its own so that neither rebuilds the other.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
)
