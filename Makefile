# The two front-door commands: `make demo` and `make test`. Each installs what it needs.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed

.PHONY: demo test install system-deps lint rules-doc bench clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/topogate generate fixtures/lab/inventory.yaml -o out
	@echo
	@echo "== the generated tree, checked: placement and policies agree"
	$(VENV)/bin/topogate check fixtures/lab/inventory.yaml --rendered out out/clusters/lab
	@echo
	@echo "== the same job written by hand, as in the incident: check must fail (exit 1)"
	$(VENV)/bin/topogate check fixtures/lab/inventory.yaml fixtures/incident/broken; \
	  test $$? -eq 1

# promtool comes from Debian's prometheus package; install it only when missing.
system-deps:
	@command -v promtool >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq prometheus >/dev/null; }

test: $(STAMP) system-deps
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) -m pytest -q -p no:cacheprovider
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/topogate rules --format markdown | diff -u docs/rules.md - \
	  || { echo "docs/rules.md is stale: run 'make rules-doc'"; exit 1; }
	$(VENV)/bin/mypy topogate
	$(VENV)/bin/ruff check topogate tests benchmarks

rules-doc: $(STAMP)
	$(VENV)/bin/topogate rules --format markdown > docs/rules.md

# End to end through the CLI on a synthetic repository; exits non-zero when a ratio is over its
# limit. A quick run: make bench BENCH_SIZES=200
BENCH_SIZES ?= 500,2000,10000
bench: $(STAMP)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) benchmarks/e2e.py --sizes $(BENCH_SIZES)

clean:
	rm -rf $(VENV) out
