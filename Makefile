# addon-operator from git. `make run` and `make test` do all set-up themselves.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin

# The local control plane: versions pinned in hack/testcluster/go.mod.
K8S_VERSION := v1.37.1
ETCD_VERSION := v3.7.0
KWOK_VERSION := v0.8.0
# Built once per machine and copied into bin/, so a fresh clone reuses it.
TESTCLUSTER_CACHE ?= $(HOME)/.cache/addon-operator/testcluster-$(K8S_VERSION)-etcd-$(ETCD_VERSION)
TESTCLUSTER_STAMP := $(BIN)/.testcluster-$(K8S_VERSION)-etcd-$(ETCD_VERSION)-kwok-$(KWOK_VERSION)

STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(BIN)/staticcheck-$(STATICCHECK_VERSION)

GO_TEST_FLAGS ?= -race -timeout 30m

.PHONY: all build run run-local test test-sops bench lint testcluster deps clean manifest

all: build

deps:
	@hack/ensure-deps.sh

# Static, without cgo: the plugin package (kustomize, through Helm) would
# otherwise export every symbol dynamically, and loading those costs ~18 MiB
# of resident memory at every start (docs/performance.md).
# `addon-operator version` prints it; Go records the commit itself.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)

build:
	CGO_ENABLED=0 $(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN)/ ./cmd/...

testcluster: $(TESTCLUSTER_STAMP)

# etcd, kube-apiserver, kube-controller-manager and kube-scheduler from
# hack/testcluster; kwok (simulated nodes and kubelets) at its own pinned
# version, with the stages it runs (hack/kwok-stages.sh).
CONTROL_PLANE := etcd kube-apiserver kube-controller-manager kube-scheduler kwok kwok-stages.yaml

$(TESTCLUSTER_STAMP): hack/testcluster/go.mod hack/testcluster/go.sum hack/testcluster/etcd/main.go hack/kwok-stages.sh hack/kwok-never-ready.yaml
	@mkdir -p $(BIN) $(TESTCLUSTER_CACHE)
	@cd hack/testcluster && for b in etcd kube-apiserver kube-controller-manager kube-scheduler; do \
		[ -x $(TESTCLUSTER_CACHE)/$$b ] && continue; \
		echo "building $$b (a cold build of the control plane takes several minutes)"; \
		case $$b in etcd) pkg=./etcd;; *) pkg=k8s.io/kubernetes/cmd/$$b;; esac; \
		$(GO) build -trimpath -ldflags='-s -w' -o $(TESTCLUSTER_CACHE)/$$b $$pkg || exit 1; \
	done
	@if [ ! -x $(TESTCLUSTER_CACHE)/kwok ]; then \
		echo "building kwok $(KWOK_VERSION)"; \
		GOBIN=$(TESTCLUSTER_CACHE) $(GO) install -trimpath -ldflags='-s -w' sigs.k8s.io/kwok/cmd/kwok@$(KWOK_VERSION) || exit 1; \
	fi
	GO=$(GO) hack/kwok-stages.sh $(KWOK_VERSION) > $(TESTCLUSTER_CACHE)/kwok-stages.yaml.tmp && mv $(TESTCLUSTER_CACHE)/kwok-stages.yaml.tmp $(TESTCLUSTER_CACHE)/kwok-stages.yaml
	cp $(addprefix $(TESTCLUSTER_CACHE)/,$(CONTROL_PLANE)) $(BIN)/
	@touch $@

test: deps testcluster test-sops
	$(GO) test $(GO_TEST_FLAGS) ./...

# secretfile against the sops library itself (a module of its own, so the
# operator never requires sops and its cloud SDKs): random documents under
# every rule, and the fixtures regenerate with `go run . -dir ..` there.
# make test runs it first: what secretfile reads must stay SOPS's own format.
test-sops:
	cd secretfile/testdata/sopsgen && $(GO) test ./...

bench: deps testcluster build
	hack/bench.sh

# deploy/addon-operator.yaml from the chart in deploy/chart (and the chart's
# copy of deploy/monitoring/rules.yaml); TestManifestUpToDate checks both.
manifest:
	$(GO) generate ./deploy/chart

lint: $(STATICCHECK)
	@out=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go')); if [ -n "$$out" ]; then echo "gofmt wants to change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...
	$(GO) run ./hack/methodcount

$(STATICCHECK):
	@mkdir -p $(BIN)
	GOBIN=$(BIN)/.staticcheck $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(BIN)/.staticcheck/staticcheck $@

run: deps testcluster build
	@hack/run.sh

run-local: deps testcluster build
	@RUN_MODE=local hack/run.sh

clean:
	rm -rf $(BIN)
