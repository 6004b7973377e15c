# kdrift: see README.md. Every target works on a fresh clone; the first run
# builds the local control plane (testdata/localcluster) once into the cache
# (~/.cache/kdrift/localcluster, or $KDRIFT_CACHE_DIR/localcluster).

GO      ?= go
BIN     := bin/kdrift
PKGS    := ./...
# The full suite starts one real kube-apiserver per test package.
TEST_TIMEOUT ?= 60m
# staticcheck is installed once, at a pinned version, into the cache (not
# go.mod's tool list: that would move golang.org/x/* modules kdrift ships).
STATICCHECK_VERSION := v0.8.2
CACHE_DIR   ?= $(or $(KDRIFT_CACHE_DIR),$(HOME)/.cache/kdrift)
STATICCHECK := $(CACHE_DIR)/tools/staticcheck-$(STATICCHECK_VERSION)/staticcheck

.PHONY: all build test test-short demo bench lint localcluster gitea delivery clean

all: lint build test

build:
	$(GO) build -o $(BIN) .

## test: the full suite, real apiserver included. The control plane is
## built first, here, where its progress shows live (go test shows a test
## package's output only when the package ends). Then the differential
## tests against the sops library, a module of their own
## (testdata/sopsref: sops links every cloud KMS client, which kdrift's
## go.mod must not; its first build compiles them, minutes on a cold
## cache).
test: LOCALCLUSTER_NEXT = run the tests
test: localcluster gitea delivery
	$(GO) test -timeout $(TEST_TIMEOUT) $(PKGS)
	cd testdata/sopsref && $(GO) test -timeout $(TEST_TIMEOUT) ./...

## test-short: the fast tier only (skips what -short marks slow).
test-short: LOCALCLUSTER_NEXT = run the fast tests
test-short: localcluster
	$(GO) test -short -timeout 20m $(PKGS)

## localcluster: build (or find cached) the local control plane binary. A
## build shows packages compiled of the total, the time and what follows.
LOCALCLUSTER_NEXT ?= use it
localcluster:
	@$(GO) run ./internal/controlplane/cmd/buildlocalcluster --next "$(LOCALCLUSTER_NEXT)"

## gitea: build (or find cached) the Gitea server the forge tests run
## against (testdata/gitea, Gitea's own module with SQLite), once, into
## the cache (~/.cache/kdrift/gitea).
gitea:
	@$(GO) run ./internal/forgetest/cmd/buildgitea >/dev/null

## delivery: build (or find cached) the real progressive-delivery
## controllers the canary tests run beside kdrift's healer (Argo Rollouts
## and Flagger, from their module releases), once, into the cache
## (~/.cache/kdrift/rollouts-controller, ~/.cache/kdrift/flagger).
delivery:
	@$(GO) run ./internal/deliverytest/cmd/builddelivery >/dev/null

## demo: kdrift against the embedded default: a local control plane with
## two hollow nodes and a demo repository.
demo: LOCALCLUSTER_NEXT = start the cluster and the demo
demo: build localcluster
	./$(BIN) demo

## bench: speed and memory figures; compare runs with benchstat.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 -timeout $(TEST_TIMEOUT) $(PKGS)

## lint: gofmt (both modules), tidy go.mod files (kdrift's and
## testdata/sopsref's, which replaces kdrift's), go vet and staticcheck
## (checks in staticcheck.conf) of kdrift's module. testdata/localcluster is not vetted:
## type-checking it means the whole Kubernetes control plane again (its
## build uses -trimpath, so nothing is shared), about ten minutes cold for a
## 200-line main that every cluster test builds and runs anyway.
lint: $(STATICCHECK)
	@out=$$(gofmt -l . ); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@$(GO) mod tidy -diff >/dev/null || { echo "go.mod is not tidy: run go mod tidy"; exit 1; }
	@cd testdata/sopsref && $(GO) mod tidy -diff >/dev/null || { echo "testdata/sopsref/go.mod is not tidy (it replaces kdrift's module, so a dependency bump there moves it): cd testdata/sopsref && go mod tidy"; exit 1; }
	$(GO) vet $(PKGS)
	$(STATICCHECK) $(PKGS)

$(STATICCHECK):
	GOBIN=$(dir $(STATICCHECK)) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

clean:
	rm -rf bin
