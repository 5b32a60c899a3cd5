# The two front-door commands: `make demo` and `make test`. Each installs what it needs, into
# .venv only: nothing system-wide, no service.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
RUNTIME := $(VENV)/.runtime
STAMP := $(VENV)/.installed
# promtool for the tests: $(PROMTOOL) when set, else the one `make test` extracts into the venv.
PROMTOOL ?=

.PHONY: demo test install crds promtool cluster-bin cilium-bin gitops-oracles node-tools lint rules-doc bench fuzz clean

$(PY):
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# What the commands need to run (kubectl included: `check` builds kustomizations with it).
$(RUNTIME): pyproject.toml | $(PY)
	$(PIP) install -q -e .
	touch $@

# The runtime plus the test tools (pytest, hypothesis, moto, mypy, ruff, ...).
$(STAMP): pyproject.toml | $(PY)
	$(PIP) install -q -e '.[test]'
	touch $@ $(RUNTIME)

install: $(STAMP)

demo: $(RUNTIME)
	$(VENV)/bin/topogate generate fixtures/lab/inventory.yaml -o out
	@echo
	@echo "== the generated tree, checked: placement and policies agree"
	$(VENV)/bin/topogate check fixtures/lab/inventory.yaml --rendered out out/clusters/lab
	@echo
	@echo "== the same job written by hand, as in the incident: check must fail (exit 1)"
	$(VENV)/bin/topogate check fixtures/lab/inventory.yaml fixtures/incident/broken; \
	  test $$? -eq 1

# The upstream CRDs the tests validate against, pinned in tests/crds.lock.json (sha256 checked).
# Without them (and without TOPOGATE_CRDS) `make test` skips the tests that need them.
crds:
	python3 tests/fetch_crds.py --dest .crds
	python3 tests/fetch_crds.py --dest .crds-schedulers --lock tests/scheduler_crds.lock.json

# promtool is one binary of Debian's prometheus package: download the package and extract just
# that binary into the venv, instead of installing the server and its systemd unit.
$(VENV)/bin/promtool: | $(PY)
	@command -v apt-get >/dev/null 2>&1 || { \
	  echo "promtool: no apt-get on this machine; set PROMTOOL=/path/to/promtool (Prometheus 2.x)"; exit 2; }
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; cd "$$tmp"; \
	  get() { apt-get download -q -o APT::Sandbox::User="$$(id -un)" prometheus >/dev/null 2>&1; }; \
	  if ! get; then \
	    if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	    echo "promtool: refreshing the apt package lists (apt-get update)"; \
	    $$SUDO apt-get update -qq </dev/null; get; \
	  fi; \
	  dpkg-deb -x prometheus_*.deb x; \
	  cp x/usr/bin/promtool "$(CURDIR)/$@"
	@echo "promtool: $$($@ --version 2>&1 | head -1) -> $@"

promtool:
	@if [ -n "$(PROMTOOL)" ]; then \
	  test -x "$(PROMTOOL)" || { echo "PROMTOOL=$(PROMTOOL) is not an executable file"; exit 2; }; \
	else $(MAKE) --no-print-directory $(VENV)/bin/promtool; fi

# kube-apiserver, kube-scheduler and etcd for the cluster tests, built from the Go module in
# tests/cluster/ once per machine into a cache keyed by its go.sum (see docs/testing.md). Without
# Go the cluster tests are skipped, unless TOPOGATE_REQUIRE_CLUSTER=1 (CI) makes that a failure.
cluster-bin:
	@if [ -n "$$TOPOGATE_CLUSTER_BIN" ]; then echo "cluster-bin: using TOPOGATE_CLUSTER_BIN=$$TOPOGATE_CLUSTER_BIN"; exit 0; fi; \
	  rc=0; dir=$$(bash tests/cluster/build.sh) || rc=$$?; \
	  if [ $$rc = 0 ]; then echo "cluster-bin: $$dir"; \
	  elif [ $$rc != 3 ] || [ "$${TOPOGATE_REQUIRE_CLUSTER:-0}" != 0 ]; then exit 2; fi

# Cilium's own policy engine for the oracle tests (tests/oracles/test_cilium_oracle.py): a small program
# built from the Go module in tests/cilium/ (github.com/cilium/cilium v1.20.2) once per machine
# into a cache keyed by its go.sum and sources (see docs/testing.md). Without Go those tests skip,
# unless TOPOGATE_REQUIRE_CILIUM=1 (CI) makes that a failure.
cilium-bin:
	@if [ -n "$$TOPOGATE_CILIUM_BIN" ]; then echo "cilium-bin: using TOPOGATE_CILIUM_BIN=$$TOPOGATE_CILIUM_BIN"; exit 0; fi; \
	  rc=0; dir=$$(bash tests/cilium/build.sh) || rc=$$?; \
	  if [ $$rc = 0 ]; then echo "cilium-bin: $$dir"; \
	  elif [ $$rc != 3 ] || [ "$${TOPOGATE_REQUIRE_CILIUM:-0}" != 0 ]; then exit 2; fi

# Flux's and Argo CD's own renderers, the oracles of the GitOps render's property tests:
# tests/flux (fluxcd/pkg/kustomize, Go 1.26) and tests/argocd (argo-cd's util/kustomize with the
# kustomize CLI it drives; Go 1.27.3, which its build.sh fetches for that build only), each built
# once per machine into a cache keyed by its go.sum (docs/testing.md). Without Go the oracle tests
# are skipped, unless TOPOGATE_REQUIRE_GITOPS_ORACLES=1 (CI) makes that a failure.
gitops-oracles:
	@for e in flux argocd; do \
	  rc=0; bin=$$(bash tests/$$e/build.sh) || rc=$$?; \
	  if [ $$rc = 0 ]; then echo "gitops-oracles: $$bin"; \
	  elif [ $$rc != 3 ] || [ "$${TOPOGATE_REQUIRE_GITOPS_ORACLES:-0}" != 0 ]; then exit 2; fi; \
	done

# The real renderer and editor server the tests drive: mermaid-cli (rendering with Debian's
# chromium, never a downloaded browser) and yaml-language-server, pinned by tests/node's
# package-lock.json and installed into tests/node/node_modules from a cache under ~/.cache.
# Without npm or chromium those tests skip, unless TOPOGATE_REQUIRE_RENDER=1 (CI) makes that a
# failure.
NODE_TOOLS := tests/node/node_modules/.installed
NPM_CACHE ?= $(HOME)/.cache/topogate/npm
$(NODE_TOOLS): tests/node/package-lock.json
	cd tests/node && PUPPETEER_SKIP_DOWNLOAD=1 npm ci -q --no-audit --no-fund --cache "$(NPM_CACHE)"
	touch $@

node-tools:
	@req=$${TOPOGATE_REQUIRE_RENDER:-0}; \
	  if ! command -v npm >/dev/null 2>&1; then \
	    echo "node-tools: no npm on this machine; the render and editor tests will skip"; \
	    [ "$$req" = 0 ] || exit 2; exit 0; fi; \
	  $(MAKE) --no-print-directory $(NODE_TOOLS) || exit 2; \
	  if ! command -v chromium >/dev/null 2>&1; then \
	    if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	    echo "node-tools: installing Debian's chromium for mermaid-cli"; \
	    { $$SUDO apt-get install -y -qq --no-install-recommends chromium </dev/null >/dev/null 2>&1 || \
	      { $$SUDO apt-get update -qq </dev/null && \
	        $$SUDO apt-get install -y -qq --no-install-recommends chromium </dev/null >/dev/null; }; } \
	      || { echo "node-tools: chromium could not be installed; the render tests will skip"; \
	           [ "$$req" = 0 ] || exit 2; }; \
	  fi

test: $(STAMP) promtool cluster-bin cilium-bin gitops-oracles node-tools
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) -m pytest -q -p no:cacheprovider
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/topogate rules --format markdown | diff -u docs/rules.md - \
	  || { echo "docs/rules.md is stale: run 'make rules-doc'"; exit 1; }
	$(VENV)/bin/mypy topogate
	$(VENV)/bin/ruff check topogate tests benchmarks

# Long fuzz run: mutated manifests, kustomizations, inventories and bases, drift snapshots, Cost
# Explorer answers and trace specs (tests/cli/test_fuzz.py), the property over generated inventories
# (tests/inventory/test_inventory_property.py) and over inventories at and past every limit
# (tests/inventory/test_generated_crd_constraints.py); failures are kept in fixtures/fuzz-corpus/. Then the
# split build and the kustomization field names against kubectl, and the Flux and Argo CD renders
# against the engines' own, on a new seed each run (the failing seed is in the message: set
# TOPOGATE_SPLIT_SEED / TOPOGATE_KEY_SEED / TOPOGATE_FLUX_SEED / TOPOGATE_ARGOCD_SEED to repeat it).
fuzz: $(STAMP)
	TOPOGATE_FUZZ_EXAMPLES=$${TOPOGATE_FUZZ_EXAMPLES:-2000} TOPOGATE_FUZZ_SAVE=1 PATH="$(CURDIR)/$(VENV)/bin:$$PATH" \
	  $(PY) -m pytest -q -p no:cacheprovider tests/cli/test_fuzz.py tests/inventory/test_inventory_property.py \
	  tests/inventory/test_generated_crd_constraints.py -k "mutated or accepted_inventories or edge_values"
	TOPOGATE_SPLIT_TREES=$${TOPOGATE_SPLIT_TREES:-3000} TOPOGATE_SPLIT_SEED=$${TOPOGATE_SPLIT_SEED:-$$(date +%s)} \
	  TOPOGATE_KEY_CASES=$${TOPOGATE_KEY_CASES:-3000} TOPOGATE_KEY_SEED=$${TOPOGATE_KEY_SEED:-$$(date +%s)} \
	  PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) -m pytest -q -p no:cacheprovider \
	  tests/sources/test_split_differential.py tests/k8s/test_kustomize_field_names.py -k "seeded_trees or reads_a_key"
	TOPOGATE_FLUX_CASES=$${TOPOGATE_FLUX_CASES:-600} TOPOGATE_FLUX_SEED=$${TOPOGATE_FLUX_SEED:-$$(date +%s)} \
	  TOPOGATE_ARGOCD_CASES=$${TOPOGATE_ARGOCD_CASES:-400} TOPOGATE_ARGOCD_SEED=$${TOPOGATE_ARGOCD_SEED:-$$(date +%s)} \
	  PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) -m pytest -q -p no:cacheprovider \
	  tests/oracles/test_flux_oracle.py tests/oracles/test_argocd_oracle.py -k "equals"

rules-doc: $(STAMP)
	$(VENV)/bin/topogate rules --format markdown > docs/rules.md

# End to end through the CLI on a synthetic repository; exits non-zero when a ratio is over its
# limit. A quick run: make bench BENCH_SIZES=200
BENCH_SIZES ?= 500,2000,10000
bench: $(STAMP)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) benchmarks/e2e.py --sizes $(BENCH_SIZES)

clean:
	rm -rf $(VENV) out
