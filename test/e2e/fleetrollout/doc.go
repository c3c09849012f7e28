// This file has no build constraint so that tools run without -tags e2e
// (go vet ./..., editors) see a package here; the code is behind the e2e tag.

package fleetrollout
