# dro: make help lists the targets.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
STAMP  := $(VENV)/.installed

.DEFAULT_GOAL := help
.PHONY: help install demo test tools browser e2e e2e-build check lint typecheck imports bench bench-e2e clean

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP) ## create .venv and install dro with its development tools

demo: install ## run the main job offline on example-repo/: validate, schedule, render, commit
	PATH=$(BIN):$$PATH bash scripts/demo.sh

test: install tools ## run the test suite (no tests collected counts as a failure)
	@bash scripts/browser-install.sh || echo "make test: no Chromium: tests/test_web_browser.py will fail"
	@$(PY) -m pytest -q -p no:cacheprovider; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; exit 1; fi; exit $$rc

tools: ## build the pinned kustomize and helm (Helm and kustomize sources) into build/tools/bin
	@bash scripts/tools-build.sh

browser: ## install Debian's chromium and chromium-driver for the web view's browser tests, if missing
	@bash scripts/browser-install.sh

e2e-build: ## build etcd, Kubernetes 1.34 and kwok from their pinned Go modules into build/e2e/bin
	bash scripts/e2e-build.sh

# make e2e: build (reusing build/e2e/bin), then tests/e2e starts three real clusters of its own
# and runs its tests, the API contract suite (tests/contract) against one of them included.
# DRO_E2E_KUBECONFIG=path make e2e instead runs the API contract suite against that cluster.
E2E_BUILD ?= bash scripts/e2e-build.sh
E2E_TESTS ?= -m e2e tests/e2e
e2e: install ## tests/e2e against three real clusters it starts (needs Go; see e2e-build)
	@if [ -n "$$DRO_E2E_KUBECONFIG" ]; then set -- tests/contract; \
	else $(E2E_BUILD) || exit 1; set -- $(E2E_TESTS); fi; \
	$(PY) -m pytest -q -p no:cacheprovider "$$@"; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; exit 1; fi; exit $$rc

lint: install ## ruff lint and format check
	$(BIN)/ruff check reconciler tests bench scripts
	$(BIN)/ruff format --check reconciler tests bench scripts

typecheck: install ## mypy --strict on reconciler/
	$(BIN)/mypy --strict

imports: install ## import-linter layer contracts
	$(BIN)/lint-imports

check: lint typecheck imports test ## every quality gate: ruff, mypy --strict, lint-imports, pytest

bench: install ## benchmarks against their baselines (kubectl kustomize, git fast-import, Karmada …)
	$(PY) bench/render.py
	$(PY) bench/commit.py
	$(PY) bench/schedule.py
	$(PY) bench/rebalance.py
	$(PY) bench/apply.py
	$(PY) bench/plan.py
	$(PY) bench/stci.py
	$(PY) bench/predict.py
	$(PY) bench/rollout.py
	$(PY) bench/templatememo.py
	$(PY) bench/api.py
	$(PY) bench/web.py
	$(PY) bench/incremental.py
	$(PY) bench/scale.py --without-diagnosis

bench-e2e: install ## the apply benchmark on real clusters beside the emulators (needs Go)
	$(E2E_BUILD)
	$(PY) bench/apply.py --real

clean: ## remove build output and the virtualenv
	rm -rf build $(VENV) *.egg-info
