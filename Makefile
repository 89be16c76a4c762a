# dro: make help lists the targets.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
STAMP  := $(VENV)/.installed

.DEFAULT_GOAL := help
.PHONY: help install demo test e2e check lint typecheck imports bench clean

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

test: install ## run the test suite (no tests collected counts as a failure)
	@$(PY) -m pytest -q -p no:cacheprovider; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; exit 1; fi; exit $$rc

e2e: ## the API contract tests against a real cluster: DRO_E2E_KUBECONFIG=path make e2e
	@if [ -z "$$DRO_E2E_KUBECONFIG" ]; then echo "set DRO_E2E_KUBECONFIG to a real cluster's kubeconfig"; exit 1; fi
	@$(MAKE) --no-print-directory install
	$(PY) -m pytest -q -p no:cacheprovider tests/contract

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

clean: ## remove build output and the virtualenv
	rm -rf build $(VENV) *.egg-info
