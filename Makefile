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
# Helm and promtool need other Kubernetes libraries than the control plane, so
# each has a tools module of its own; changing them rebuilds only that tool.
HELM     := $(BIN)/helm
PROMTOOL := $(BIN)/promtool
# The Prometheus server that gates' analyses are tested against; promtool's
# version, in a tools module of its own.
PROMETHEUS := $(BIN)/prometheus
HELM_VERSION := v4.2.4
PROMETHEUS_VERSION := 3.16.0
TOOLS := $(KUBE_BINS) $(ETCD) $(KWOK_BINS) $(CONTROLLER_GEN) $(GOLANGCI_LINT) $(HELM) $(PROMTOOL) $(PROMETHEUS)

# Empty IMAGE names the image after the chart's default (image.repository:appVersion).
IMAGE      ?=
IMAGE_TAR  ?= $(CURDIR)/.dev/image/lockstep.tar

GO_TEST_FLAGS ?= -count=1
# The unit and envtest packages run under the race detector (RACE= turns it off).
RACE          ?= -race
E2E_TIMEOUT   ?= 40m

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

$(HELM): $(TOOLS_DIR)/helm/go.mod $(TOOLS_DIR)/helm/go.sum
	@echo ">> building helm $(HELM_VERSION) (about 2.5 minutes cold)"
	cd $(TOOLS_DIR)/helm && go build -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$(HELM_VERSION)" -o $@ helm.sh/helm/v4/cmd/helm
	@touch $@

$(PROMTOOL): $(TOOLS_DIR)/promtool/go.mod $(TOOLS_DIR)/promtool/go.sum
	@echo ">> building promtool $(PROMETHEUS_VERSION) (about 6 minutes cold)"
	cd $(TOOLS_DIR)/promtool && go build -ldflags "-s -w -X github.com/prometheus/common/version.Version=$(PROMETHEUS_VERSION)" -o $@ github.com/prometheus/prometheus/cmd/promtool
	@touch $@

$(PROMETHEUS): $(TOOLS_DIR)/prometheus/go.mod $(TOOLS_DIR)/prometheus/go.sum
	@echo ">> building the Prometheus server $(PROMETHEUS_VERSION) (about 4 minutes cold after promtool)"
	cd $(TOOLS_DIR)/prometheus && go build -ldflags "-s -w -X github.com/prometheus/common/version.Version=$(PROMETHEUS_VERSION)" -o $@ github.com/prometheus/prometheus/cmd/prometheus
	@touch $@

##@ Development

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Regenerate deepcopy code, CRDs, RBAC and webhook manifests.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(CONTROLLER_GEN) crd:allowDangerousTypes=false,generateEmbeddedObjectMeta=true paths=./api/v1alpha1/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) crd:allowDangerousTypes=false,generateEmbeddedObjectMeta=true paths=./api/fleet/... output:crd:artifacts:config=config/fleet/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=operator paths=./internal/controller/... output:rbac:artifacts:config=config/rbac
	$(CONTROLLER_GEN) rbac:roleName=hub paths=./internal/hub/... output:rbac:artifacts:config=config/fleet/rbac
	$(CONTROLLER_GEN) rbac:roleName=hub-member paths=./internal/fleet/member output:rbac:artifacts:config=config/fleet/member-rbac
	$(CONTROLLER_GEN) webhook paths=./internal/webhook output:webhook:artifacts:config=config/webhook
	$(CONTROLLER_GEN) webhook paths=./internal/webhook/fleet output:webhook:artifacts:config=config/fleet/webhook
	rm -f charts/lockstep/crds/*.yaml charts/lockstep/files/fleet-crds/*.yaml
	cp config/crd/bases/*.yaml charts/lockstep/crds/
	cp config/fleet/crd/bases/*.yaml charts/lockstep/files/fleet-crds/
	cp config/rbac/role.yaml charts/lockstep/files/operator-role.yaml
	cp config/fleet/rbac/role.yaml charts/lockstep/files/hub-role.yaml
	cp config/fleet/member-rbac/role.yaml charts/lockstep/files/member-role.yaml
	cp config/webhook/manifests.yaml charts/lockstep/files/webhook-manifests.yaml
	cp config/fleet/webhook/manifests.yaml charts/lockstep/files/fleet-webhook-manifests.yaml

.PHONY: verify-generate
verify-generate: generate ## Fail when generated files are stale.
	@git diff --exit-code -- api config charts || { echo "generated files are stale: run 'make generate' and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- api config charts)" || { git status --porcelain -- api config charts; echo "untracked generated files: run 'make generate' and commit"; exit 1; }

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

.PHONY: image
image: ## Build the operator's OCI image as a tarball ($(IMAGE_TAR)), without a container engine.
	cd hack/image && go run . -repo $(CURDIR) $(if $(IMAGE),-image $(IMAGE)) -o $(IMAGE_TAR)

##@ Tests

.PHONY: test
test: tools test-unit test-e2e ## Unit, envtest integration and local-cluster e2e tests.

.PHONY: test-unit
test-unit: $(KUBE_BINS) $(ETCD) $(HELM) $(PROMTOOL) $(PROMETHEUS) ## Unit and envtest integration tests under the race detector (real kube-apiserver and etcd, helm, promtool and the Prometheus server from bin/), the image build and run.
	KUBEBUILDER_ASSETS=$(BIN) LOCKSTEP_BIN=$(BIN) go test $(GO_TEST_FLAGS) $(RACE) ./...
	cd hack/image && go test $(GO_TEST_FLAGS) $(RACE) ./...

.PHONY: test-e2e
test-e2e: $(KUBE_BINS) $(ETCD) $(KWOK_BINS) $(HELM) $(PROMETHEUS) ## End-to-end tests on throwaway kwok clusters with the real scheduler; the chart's real install.
	@# -p 1: each e2e package starts its own kwok clusters; started side by side
	@# they race for the same free ports.
	LOCKSTEP_BIN=$(BIN) go test $(GO_TEST_FLAGS) -p 1 -tags e2e -timeout $(E2E_TIMEOUT) ./test/e2e/...

.PHONY: chaos
chaos: $(KUBE_BINS) $(ETCD) $(KWOK_BINS) ## Rollouts of every strategy under injected faults (apiserver/etcd restarts, scheduler down, nodes lost, other writers, ...): CHAOS_PROCS runs side by side (5), each injecting every fault CHAOS_RUNS times over the strategies (6: once into each); LOCKSTEP_E2E_SEED replays. See docs/reliability.md.
	LOCKSTEP_BIN=$(BIN) hack/chaos.sh

.PHONY: chart-test
chart-test: $(HELM) $(PROMTOOL) $(KUBE_BINS) $(ETCD) $(KWOK_BINS) ## The chart alone: lint, golden renders, promtool rules, then a real install/upgrade/uninstall on a kwok cluster.
	LOCKSTEP_BIN=$(BIN) go test $(GO_TEST_FLAGS) ./test/chart/...
	LOCKSTEP_BIN=$(BIN) go test $(GO_TEST_FLAGS) -tags e2e -timeout 10m ./test/e2e/chart/...

.PHONY: chart-golden
chart-golden: $(HELM) ## Rewrite the chart's golden renders after an intended change.
	LOCKSTEP_BIN=$(BIN) go test $(GO_TEST_FLAGS) ./test/chart/ -run TestTemplate -update

.PHONY: bench
bench: ## Planner benchmarks, with figures relative to a baseline measured in the same run; then bench-fleet.
	hack/bench.sh
	$(MAKE) --no-print-directory bench-fleet

.PHONY: bench-rollout
bench-rollout: $(KUBE_BINS) $(ETCD) $(KWOK_BINS) ## Roll the same pods with the Deployment controller and with Lockstep on a local cluster (BENCH_PODS, default 60), then the disaggregated example against its planner: time, ideal, apiserver writes.
	LOCKSTEP_BIN=$(BIN) LOCKSTEP_BENCH_PODS=$${BENCH_PODS:-60} LOCKSTEP_E2E_CLUSTER=lockstep-bench \
		go test -count=1 -tags e2e -timeout 60m -run '^TestBench_RolloutAgainstTheDeploymentController$$' -v ./test/e2e/ \
		| grep --line-buffered -vE '^(=== RUN|--- PASS|PASS$$)'

.PHONY: bench-scale
bench-scale: $(KUBE_BINS) $(ETCD) $(KWOK_BINS) ## On a local cluster, BENCH_SETS (100) Deployments, then as many PodCliqueSets of one clique, × BENCH_SET_PODS (100) pods (peerDNS BENCH_PEER_DNS: Replica, or None for no Services; surgePlacement BENCH_SURGE_PLACEMENT: AboveReplicas or ReplacedIndex), 25%/25%, both controllers' clients at 50 QPS (burst 100): create, roll and delete times, writes per pod, CPU and peak RSS side by side; operator RSS beside the Deployments' pods; operator writes over 60 s settled.
	KWOKCTL_CREATE_ARGS="--extra-args=kube-controller-manager=kube-api-qps=50 --extra-args=kube-controller-manager=kube-api-burst=100" \
		LOCKSTEP_BIN=$(BIN) LOCKSTEP_BENCH_SCALE_SETS=$${BENCH_SETS:-100} LOCKSTEP_BENCH_SCALE_PODS=$${BENCH_SET_PODS:-100} LOCKSTEP_BENCH_SCALE_IDLE=60s LOCKSTEP_BENCH_SCALE_PHASE_TIMEOUT=75m LOCKSTEP_BENCH_SCALE_PEER_DNS=$${BENCH_PEER_DNS:-Replica} LOCKSTEP_BENCH_SCALE_SURGE_PLACEMENT=$${BENCH_SURGE_PLACEMENT:-AboveReplicas} \
		LOCKSTEP_E2E_CLUSTER=lockstep-scale go test -count=1 -tags e2e -timeout 360m -run '^TestBench_Scale$$' -v ./test/e2e/ \
		| grep --line-buffered -vE '^(=== RUN|--- PASS|PASS$$)'

.PHONY: bench-hub
bench-hub: $(KUBE_BINS) $(ETCD) $(KWOK_BINS) ## The hub at KubeFleet's shape: BENCH_HUB_CLUSTERS MemberClusters (100,1000; aliases over 3 kwok members), 1,000 Placements, BENCH_HUB_WORKLOADS (100) rollouts at once: hub RSS, CPU, rounds against the ideal, member-event-to-grant p50/p99.
	LOCKSTEP_BIN=$(BIN) go run -tags e2e ./test/e2e/benchhub -clusters $${BENCH_HUB_CLUSTERS:-100,1000} -workloads $${BENCH_HUB_WORKLOADS:-100} -placements $${BENCH_HUB_PLACEMENTS:-1000} $(BENCH_HUB_FLAGS)

.PHONY: dashboard-picture
dashboard-picture: $(KUBE_BINS) $(ETCD) $(KWOK_BINS) ## Draw docs/images/dashboard.svg from the operator's metrics during a real rollout (the e2e metrics test, on its own cluster).
	LOCKSTEP_BIN=$(BIN) LOCKSTEP_E2E_CLUSTER=lockstep-dashboard LOCKSTEP_DASHBOARD_SVG=$(CURDIR)/docs/images/dashboard.svg \
		go test -count=1 -tags e2e -timeout 20m -run '^TestMetrics_PerRoleSeriesFollowARollout$$' -v ./test/e2e/

.PHONY: bench-fleet
bench-fleet: ## Simulate decision updates of 10,000 clusters, and a rollout over 10,000 members under one budget; then the fleet planner's property tests at FLEET_PROPERTY_CHECKS (100,000) cases each.
	go run ./hack/fleetsim -clusters $${FLEET_CLUSTERS:-10000}
	ALIGN_SIM_MEMBERS=$${ALIGN_SIM_MEMBERS:-10000} go test -count=1 -run TestAlign_SimulationAtScale -v ./internal/fleet/align/ | grep -E 'members|ok|FAIL' 
	go test -count=1 -timeout 60m \
		-run '^(TestAlign_FleetInvariantsHoldAndRolloutsComplete|TestWidest_ChargesAtLeastEitherGrant|TestDeployment_KeepsItsLimitsAndCompletes|TestDeploymentStatus_IsWhatTheHubReads)$$' \
		./internal/fleet/align/ ./internal/fleet/deploysim/ ./internal/fleet/fleetsim/ -rapid.checks=$${FLEET_PROPERTY_CHECKS:-100000}

##@ Local cluster

.PHONY: demo
demo: $(KUBE_BINS) $(ETCD) $(KWOK_BINS) build ## Local cluster, operator and a narrated tour of rollouts with `kubectl lockstep` (DEMO_AUTO=1: unattended).
	BIN=$(BIN) DEV=$(DEV) hack/demo.sh

.PHONY: demo-down
demo-down: $(KWOK_BINS) ## Stop the demo's operator and delete its cluster.
	BIN=$(BIN) DEV=$(DEV) hack/demo.sh down

.PHONY: demo-fleet
demo-fleet: $(KUBE_BINS) $(ETCD) $(KWOK_BINS) build ## Local fleet (a hub, 3 members), `lockstep hub`, an operator per member and a narrated fleet rollout with a member unreachable mid-way (DEMO_AUTO=1: unattended; DEMO_KEEP=1: leave it running).
	BIN=$(BIN) DEV=$(DEV) hack/demo-fleet.sh

.PHONY: demo-fleet-down
demo-fleet-down: $(KWOK_BINS) ## Stop the fleet demo's hub and operators and delete its clusters and files.
	BIN=$(BIN) DEV=$(DEV) hack/demo-fleet.sh down

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

##@ Local fleet

FLEET_DIR ?= $(DEV)/fleet
MEMBERS   ?= 3
MEMBER    ?= m1

.PHONY: fleet-up
fleet-up: $(KUBE_BINS) $(ETCD) $(KWOK_BINS) ## Start a hub and MEMBERS (3) member clusters, register the members; kubeconfigs in .dev/fleet/.
	BIN=$(BIN) FLEET_DIR=$(FLEET_DIR) MEMBERS=$(MEMBERS) hack/dev/fleet-up.sh

.PHONY: fleet-down
fleet-down: $(KWOK_BINS) ## Delete the local fleet (hub and every member).
	BIN=$(BIN) FLEET_DIR=$(FLEET_DIR) hack/dev/fleet-down.sh

.PHONY: fleet-run
fleet-run: ## Run the hub from source against the local fleet's hub.
	@test -f $(FLEET_DIR)/hub.kubeconfig || { echo "no $(FLEET_DIR)/hub.kubeconfig: run 'make fleet-up' first"; exit 1; }
	$(BIN)/kubectl --kubeconfig $(FLEET_DIR)/hub.kubeconfig apply --server-side --force-conflicts -f config/fleet/crd/bases >/dev/null
	go run ./cmd/lockstep hub --kubeconfig $(FLEET_DIR)/hub.kubeconfig --dev-webhooks --leader-elect=false \
		--webhook-cert-dir $(FLEET_DIR)/hub-webhook-certs

# Ports of one member's operator: the index of m<i> offsets them, so that the
# operators of several members (and `make run`) can run side by side.
MEMBER_INDEX = $(patsubst m%,%,$(MEMBER))

.PHONY: fleet-run-operator
fleet-run-operator: ## Run the operator from source in member MEMBER (m1) of the local fleet.
	@test -f $(FLEET_DIR)/$(MEMBER).kubeconfig || { echo "no $(FLEET_DIR)/$(MEMBER).kubeconfig: run 'make fleet-up' first"; exit 1; }
	$(BIN)/kubectl --kubeconfig $(FLEET_DIR)/$(MEMBER).kubeconfig apply --server-side --force-conflicts -f config/crd/bases >/dev/null
	go run ./cmd/lockstep operator --kubeconfig $(FLEET_DIR)/$(MEMBER).kubeconfig --dev-webhooks --leader-elect=false \
		--webhook-port $$((9450 + $(MEMBER_INDEX))) --webhook-cert-dir $(FLEET_DIR)/$(MEMBER)-webhook-certs \
		--metrics-bind-address 0 --health-probe-bind-address 127.0.0.1:$$((8100 + $(MEMBER_INDEX)))

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ { printf "  %-16s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)
