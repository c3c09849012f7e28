# Lockstep — see README.md. Every binary a target needs is built from the module
# proxy into bin/ by `make tools`; nothing has to be installed by hand.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := build

BIN        := $(CURDIR)/bin
DEV        := $(CURDIR)/.dev
KUBECONFIG_DEV := $(DEV)/kubeconfig
TOOLS_DIR  := hack/tools
TOOLS_DEPS := $(TOOLS_DIR)/go.mod $(TOOLS_DIR)/go.sum

# The Kubernetes release the tools module pins; stamped into the binaries' version.
KUBE_VERSION := v1.36.3
KUBE_LDFLAGS := -s -w \
	-X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=36 \
	-X k8s.io/component-base/version.gitTreeState=clean \
	-X k8s.io/client-go/pkg/version.gitVersion=$(KUBE_VERSION) \
	-X k8s.io/client-go/pkg/version.gitMajor=1 \
	-X k8s.io/client-go/pkg/version.gitMinor=36

KUBE_BINS := $(BIN)/kube-apiserver $(BIN)/kube-scheduler $(BIN)/kube-controller-manager $(BIN)/kubectl
ETCD      := $(BIN)/etcd
KWOK_BINS := $(BIN)/kwok $(BIN)/kwokctl
CONTROLLER_GEN := $(BIN)/controller-gen
GOLANGCI_LINT  := $(BIN)/golangci-lint
TOOLS := $(KUBE_BINS) $(ETCD) $(KWOK_BINS) $(CONTROLLER_GEN) $(GOLANGCI_LINT)

GO_TEST_FLAGS ?= -count=1
E2E_TIMEOUT   ?= 30m

##@ Tools

.PHONY: tools
tools: $(TOOLS) ## Build the pinned toolchain into bin/ (only what is missing or out of date).

# Each group is rebuilt only when the pinned versions (hack/tools/go.mod, go.sum) change.
$(KUBE_BINS) &: $(TOOLS_DEPS)
	@echo ">> building Kubernetes $(KUBE_VERSION) binaries (about 4 minutes cold)"
	cd $(TOOLS_DIR) && go build -ldflags "$(KUBE_LDFLAGS)" -o $(BIN)/ \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-scheduler \
		k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl
	@touch $(KUBE_BINS)

$(ETCD): $(TOOLS_DEPS)
	@echo ">> building etcd"
	cd $(TOOLS_DIR) && go build -ldflags "-s -w" -o $@ go.etcd.io/etcd/server/v3
	@touch $@

$(KWOK_BINS) &: $(TOOLS_DEPS)
	@echo ">> building kwok and kwokctl"
	cd $(TOOLS_DIR) && go build -ldflags "-s -w" -o $(BIN)/ sigs.k8s.io/kwok/cmd/kwok sigs.k8s.io/kwok/cmd/kwokctl
	@touch $(KWOK_BINS)

$(CONTROLLER_GEN): $(TOOLS_DEPS)
	cd $(TOOLS_DIR) && go build -o $@ sigs.k8s.io/controller-tools/cmd/controller-gen
	@touch $@

$(GOLANGCI_LINT): $(TOOLS_DEPS)
	@echo ">> building golangci-lint"
	cd $(TOOLS_DIR) && go build -o $@ github.com/golangci/golangci-lint/v2/cmd/golangci-lint
	@touch $@

##@ Development

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Regenerate deepcopy code, CRDs, RBAC and webhook manifests.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(CONTROLLER_GEN) crd:allowDangerousTypes=false,generateEmbeddedObjectMeta=true paths=./api/v1alpha1/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) crd:allowDangerousTypes=false,generateEmbeddedObjectMeta=true paths=./api/fleet/... output:crd:artifacts:config=config/fleet/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=operator paths=./internal/controller/... output:rbac:artifacts:config=config/rbac
	$(CONTROLLER_GEN) webhook paths=./internal/webhook/... output:webhook:artifacts:config=config/webhook

.PHONY: verify-generate
verify-generate: generate ## Fail when generated files are stale.
	@git diff --exit-code -- api config || { echo "generated files are stale: run 'make generate' and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- api config)" || { git status --porcelain -- api config; echo "untracked generated files: run 'make generate' and commit"; exit 1; }

.PHONY: fmt
fmt: ## gofmt the tree.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## go vet (including the e2e build tag).
	go vet ./...
	go vet -tags e2e ./test/...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run the linters configured in .golangci.yml.
	$(GOLANGCI_LINT) run ./...

.PHONY: verify
verify: verify-generate vet lint ## Everything CI checks besides the tests.

.PHONY: build
build: ## Build bin/lockstep and bin/kubectl-lockstep (the same binary, as a kubectl plugin).
	go build -o $(BIN)/lockstep ./cmd/lockstep
	ln -sf lockstep $(BIN)/kubectl-lockstep

.PHONY: plugin
plugin: build ## Install `kubectl lockstep`: bin/kubectl-lockstep (put bin/ on PATH).

##@ Tests

.PHONY: test
test: tools test-unit test-e2e ## Unit, envtest integration and local-cluster e2e tests.

.PHONY: test-unit
test-unit: $(KUBE_BINS) $(ETCD) ## Unit and envtest integration tests (real kube-apiserver and etcd from bin/).
	KUBEBUILDER_ASSETS=$(BIN) go test $(GO_TEST_FLAGS) ./...

.PHONY: test-e2e
test-e2e: $(KUBE_BINS) $(ETCD) $(KWOK_BINS) ## End-to-end tests on a throwaway kwok cluster with the real scheduler.
	LOCKSTEP_BIN=$(BIN) go test $(GO_TEST_FLAGS) -tags e2e -timeout $(E2E_TIMEOUT) ./test/e2e/...

.PHONY: bench
bench: ## Planner benchmarks, with figures relative to a baseline measured in the same run; then bench-fleet.
	hack/bench.sh
	$(MAKE) --no-print-directory bench-fleet

.PHONY: bench-fleet
bench-fleet: ## Simulate decision updates of 10,000 clusters: absences, peak slice size, writes, planner time.
	go run ./hack/fleetsim -clusters $${FLEET_CLUSTERS:-10000}

##@ Local cluster

.PHONY: demo
demo: $(KUBE_BINS) $(ETCD) $(KWOK_BINS) build ## Local cluster, operator and a narrated tour of rollouts with `kubectl lockstep` (DEMO_AUTO=1: unattended).
	BIN=$(BIN) DEV=$(DEV) hack/demo.sh

.PHONY: demo-down
demo-down: $(KWOK_BINS) ## Stop the demo's operator and delete its cluster.
	BIN=$(BIN) DEV=$(DEV) hack/demo.sh down

.PHONY: dev-up
dev-up: $(KUBE_BINS) $(ETCD) $(KWOK_BINS) ## Start the local Kubernetes 1.36 cluster (kwok) and write .dev/kubeconfig.
	BIN=$(BIN) DEV=$(DEV) hack/dev/up.sh

.PHONY: dev-down
dev-down: $(KWOK_BINS) ## Delete the local cluster.
	BIN=$(BIN) DEV=$(DEV) hack/dev/down.sh

.PHONY: install
install: $(KUBE_BINS) ## Install the CRDs into the cluster of .dev/kubeconfig.
	$(BIN)/kubectl --kubeconfig $(KUBECONFIG_DEV) apply --server-side --force-conflicts -f config/crd/bases

.PHONY: run
run: install ## Run the operator from source against the local cluster (webhooks served from this host).
	go run ./cmd/lockstep operator --kubeconfig $(KUBECONFIG_DEV) --dev-webhooks --leader-elect=false

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ { printf "  %-16s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)
