# Two entry points on a fresh clone: `make run` and `make test`. Both build .venv first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/spacehub up --data-dir .spacehub

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/pytest -q

bench: $(STAMP)
	$(BIN)/python bench/api_bench.py
	$(BIN)/python bench/placement_bench.py
	$(BIN)/python bench/placement_hub_bench.py
	$(BIN)/python bench/scheduling_bench.py
	$(BIN)/python bench/sync_bench.py
	$(BIN)/python bench/fanout_bench.py
	$(BIN)/python bench/status_bench.py
	$(BIN)/python bench/division_bench.py
	$(BIN)/python bench/debug_bench.py
	$(BIN)/python bench/hubs_bench.py
	$(BIN)/python bench/rollout_bench.py
	$(BIN)/python bench/spaces_bench.py

clean:
	rm -rf $(VENV) .spacehub
