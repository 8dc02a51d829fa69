# Phalanx's build entry points. `make test` is what CI runs (.ci/run).

GO ?= go
PKGS := ./...

.PHONY: all build test fmt-check tidy-check vet unit race bench fuzz

all: build

# phalanx version prints these.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
BUILD_DATE ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -X main.buildVersion=$(VERSION) -X main.buildCommit=$(COMMIT) -X main.buildDate=$(BUILD_DATE)

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/phalanx ./cmd/phalanx

# The README's test command: formatting, a tidy go.mod, vet, every unit, golden and
# simulator test, and the race detector over the packages that run
# goroutines.
test: fmt-check tidy-check vet verify-generate unit race chart-test e2e

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# go.mod and go.sum say exactly what the code imports.
tidy-check:
	@$(GO) mod tidy -diff || { echo "go.mod or go.sum is not tidy: run go mod tidy"; exit 1; }

vet:
	$(GO) vet $(PKGS)

unit:
	$(GO) test -count=1 $(PKGS)

race:
	$(GO) test -count=1 -short -race ./core/... ./sim/... ./scheduler/... ./cmd/...

# End-to-end tests of the Kubernetes adapter, under the race detector, against a dedicated local
# control plane (etcd, kube-apiserver, KWOK); see hack/test-e2e.sh.
.PHONY: e2e
e2e:
	hack/test-e2e.sh

# The Helm chart (charts/phalanx): helm lint, and helm template with default and other values
# checked by test/chart. helm is built from the module proxy the first time (hack/helm.sh).
.PHONY: chart-test
chart-test:
	@helm=$$(hack/helm.sh) && \
	$$helm lint --strict charts/phalanx && \
	$$helm lint --strict charts/phalanx --set grafanaDashboard.enabled=true,createNamespace=true && \
	$(GO) vet -tags chart ./test/chart && \
	PHALANX_HELM=$$helm $(GO) test -count=1 -tags chart ./test/chart

# Benchmarks print figures; they assert nothing about time.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./core/... ./sim/...

# Short fuzzing of the parsers of user input.
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzReadTrace -fuzztime $(FUZZTIME) ./workload
	$(GO) test -run '^$$' -fuzz FuzzReadScenario -fuzztime $(FUZZTIME) ./workload
	$(GO) test -run '^$$' -fuzz 'FuzzParseEstimateError$$' -fuzztime $(FUZZTIME) ./sim
	$(GO) test -run '^$$' -fuzz FuzzParseEstimateErrors -fuzztime $(FUZZTIME) ./sim
	$(GO) test -run '^$$' -fuzz FuzzParseEstimate -fuzztime $(FUZZTIME) ./scheduler
	$(GO) test -run '^$$' -fuzz FuzzPodReader -fuzztime $(FUZZTIME) ./scheduler
	$(GO) test -run '^$$' -fuzz FuzzForeignPodGroup -fuzztime $(FUZZTIME) ./scheduler
	$(GO) test -run '^$$' -fuzz FuzzQueueReader -fuzztime $(FUZZTIME) ./scheduler
	$(GO) test -run '^$$' -fuzz FuzzOwnerSpec -fuzztime $(FUZZTIME) ./scheduler
	$(GO) test -run '^$$' -fuzz FuzzRestoreState -fuzztime $(FUZZTIME) ./scheduler
	$(GO) test -run '^$$' -fuzz FuzzMembershipOf -fuzztime $(FUZZTIME) ./scheduler
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime $(FUZZTIME) ./config

# Generated code: deepcopy functions and CRD manifests, from the kubebuilder
# markers in apis/. `make verify-generate` fails if they are stale.
CONTROLLER_GEN_VERSION := v0.19.0
CONTROLLER_GEN := $(CURDIR)/bin/controller-gen-$(CONTROLLER_GEN_VERSION)

$(CONTROLLER_GEN):
	mkdir -p $(CURDIR)/bin
	GOBIN=$(CURDIR)/bin/.gobin $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(CURDIR)/bin/.gobin/controller-gen $@

.PHONY: generate verify-generate
generate: $(CONTROLLER_GEN)
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./apis/...
	$(CONTROLLER_GEN) crd:crdVersions=v1 paths=./apis/... output:crd:dir=deploy/crds
	GO=$(GO) hack/update-codegen.sh
	$(MAKE) chart-files

# The Helm chart renders copies of the CRDs and of the Grafana dashboard (a chart cannot read
# files outside its folder); they are made here, never edited in charts/.
CHART_FILES := charts/phalanx/files
.PHONY: chart-files
chart-files:
	rm -f $(CHART_FILES)/crds/*.yaml
	mkdir -p $(CHART_FILES)/crds
	cp deploy/crds/*.yaml $(CHART_FILES)/crds/
	cp deploy/grafana/phalanx-dashboard.json $(CHART_FILES)/

verify-generate: generate
	@git diff --exit-code -- apis deploy/crds client $(CHART_FILES) || { echo "generated files are stale: run make generate"; exit 1; }
	@untracked=$$(git ls-files --others --exclude-standard -- apis deploy/crds client $(CHART_FILES)); \
	if [ -n "$$untracked" ]; then echo "generated files not committed: $$untracked"; exit 1; fi
