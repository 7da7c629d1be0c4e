# engram: `make run` to start locally, `make test` for the full suite.
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
SUM := $(shell cat pyproject.toml | cksum | cut -d' ' -f1)
# What the service needs (make run), and everything (tests, lint, bench, eval, the operator).
RUN_STAMP := $(VENV)/.installed-run-$(SUM)
STAMP := $(VENV)/.installed-all-$(SUM)
# The first Python >= 3.11 on PATH.
PYTHON ?= $(shell for p in python3 python3.11 python3.12 python3.13; do \
	command -v $$p >/dev/null && $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null \
	&& echo $$p && break; done)

.PHONY: install run test browser e2e image lint format bench eval mutants clean

define venv
	@test -n "$(PYTHON)" || { echo "engram needs Python 3.11 or newer on PATH" >&2; exit 2; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
endef

$(RUN_STAMP): pyproject.toml
	$(venv)
	$(BIN)/python -m pip install --quiet -e .
	@rm -f $(VENV)/.installed-run-* && touch $(RUN_STAMP)

$(STAMP): pyproject.toml
	$(venv)
	$(BIN)/python -m pip install --quiet -e '.[dev,operator,eval,peers]'
	@rm -f $(VENV)/.installed-* && touch $(STAMP) $(RUN_STAMP)

install: $(STAMP)

## run: embedded PostgreSQL + migrations + default tenant + the service on :8080 (installs the
## service's own dependencies only; `make test`, `bench` and `eval` add the rest)
run: $(RUN_STAMP)
	$(BIN)/engram dev

## test: lint (ruff, mypy), then every test (starts and stops the servers it needs)
test: install lint browser
	$(BIN)/pytest -q

# The UI tests drive Debian's chromium (with a CJK font for the screenshots). Installed when we
# may (root with apt); elsewhere those tests skip and say why.
browser:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  { DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium fonts-wqy-zenhei >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium fonts-wqy-zenhei >/dev/null; }; } \
	  || echo "no chromium: the UI tests will be skipped"; }

## image: the one image of the operator and every tenant, tagged as the chart expects
## (then `kind load docker-image engram:<version>`, or tag and push it to your registry)
IMAGE ?= engram:$(shell sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}/\1/p' charts/engram/Chart.yaml)
image:
	docker build -t $(IMAGE) .
	@echo "built $(IMAGE): kind load docker-image $(IMAGE)   (or: docker tag $(IMAGE) <registry>/$(IMAGE) && docker push <registry>/$(IMAGE))"

## e2e: kind cluster, image, chart, a MemoryTenant, its MCP URL (needs Docker, kind, kubectl)
e2e: install
	$(BIN)/pytest -v -rs -m e2e tests/e2e

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

## mutants: one-line breakages of the operator's and the write path's promises (tests/mutants.py); each must fail a test
mutants: install
	$(BIN)/python -m tests.mutants

## bench: writes of realistic facts and chat turns (en, zh; text from ../shared/data), embedding
## speed, search latency and the load curve (closed 1-32 clients, open 25-200 requests/s) at 10k,
## 100k and 1M memories, across 1,000 tenants, beside the MCP reference memory server, and another
## tenant's search under six abuses (prints figures; the 1M step takes about an hour)
bench: install
	$(BIN)/python -u -m benchmarks.embedders
	$(BIN)/python -u -m benchmarks.bench --scales 10000,100000,1000000 --tenants 1000
	$(BIN)/python -u -m benchmarks.abuse

## eval: retrieval quality on LoCoMo and MADial-Bench (../shared/data), held-out split (prints figures)
eval: install
	$(BIN)/engram migrate >/dev/null
	$(BIN)/engram eval --split test

clean:
	-$(BIN)/engram db stop 2>/dev/null
	rm -rf $(VENV) .state .pytest_cache .ruff_cache .mypy_cache
