package main

import (
	"fmt"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/lockstep-dev/lockstep/internal/analysis"
)

// analysisOptions are the flags that open gates' analyses to servers: the
// Prometheus servers they may query and the URL prefixes of the webhooks
// they may call. Both are empty by default.
type analysisOptions struct {
	prometheusAddresses, webhookPrefixes []string
}

func (o *analysisOptions) bind(f *pflag.FlagSet, who string) {
	f.StringArrayVar(&o.prometheusAddresses, "analysis-prometheus-address", nil,
		"A Prometheus server (http or https base URL) that gates' analyses may query; repeatable. None (the default): a gate with an analysis holds, saying the address is not allowed. The "+who+" sends the gate's query to it, so allow only servers any author of a gated object may query.")
	f.StringArrayVar(&o.webhookPrefixes, "analysis-webhook-url-prefix", nil,
		"A URL prefix (http or https; scheme, host and leading path segments) under which gates' webhook analyses may be called; repeatable. None (the default): a webhook analysis holds, saying its URL is not allowed.")
}

// measurer is the Measurer the flags allow.
func (o *analysisOptions) measurer() (*analysis.Measurer, error) {
	m := &analysis.Measurer{}
	for _, a := range o.prometheusAddresses {
		if err := analysis.ValidateAddress(a); err != nil {
			return nil, fmt.Errorf("--analysis-prometheus-address: %w", err)
		}
		m.PrometheusAddresses = append(m.PrometheusAddresses, analysis.NormalizeAddress(a))
	}
	for _, p := range o.webhookPrefixes {
		if err := analysis.ValidateAddress(p); err != nil {
			return nil, fmt.Errorf("--analysis-webhook-url-prefix: %w", err)
		}
		m.WebhookPrefixes = append(m.WebhookPrefixes, p)
	}
	if len(m.PrometheusAddresses)+len(m.WebhookPrefixes) > 0 {
		ctrl.Log.WithName("setup").Info("gates' analyses may call", "prometheus", m.PrometheusAddresses, "webhooks", m.WebhookPrefixes)
	}
	return m, nil
}
