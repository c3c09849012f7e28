// Package config carries the generated manifests (CRDs, webhook configurations)
// inside the binary, so the operator's and the hub's dev mode and the tests use exactly the
// files `make generate` writes.
package config

import "embed"

// CRDs holds crd/bases/*.yaml.
//
//go:embed crd/bases/*.yaml
var CRDs embed.FS

// WebhookManifests is webhook/manifests.yaml.
//
//go:embed webhook/manifests.yaml
var WebhookManifests []byte

// FleetCRDs holds fleet/crd/bases/*.yaml, the CRDs of a hub.
//
//go:embed fleet/crd/bases/*.yaml
var FleetCRDs embed.FS

// FleetWebhookManifests is fleet/webhook/manifests.yaml, the hub's webhooks.
//
//go:embed fleet/webhook/manifests.yaml
var FleetWebhookManifests []byte
