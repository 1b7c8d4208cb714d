# Each target creates the environment when it is missing or stale, so a fresh
# clone needs only Python 3.11+ and the package registries.
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
UV := $(PYTHON) -m uv
STAMP := $(VENV)/.installed

.PHONY: env demo test lint format bench lock clean snapshots

env: $(STAMP)

$(STAMP): requirements.lock pyproject.toml
	@$(UV) --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet uv
	@test -x $(VPY) || $(UV) venv --quiet --python $(PYTHON) $(VENV)
	$(UV) pip sync --quiet --python $(VPY) requirements.lock
	$(UV) pip install --quiet --python $(VPY) --no-deps -e .
	@touch $(STAMP)

demo: $(STAMP)
	$(VPY) examples/claims.py

lint: $(STAMP)
	$(VPY) -m ruff check .
	$(VPY) -m ruff format --check .
	$(VPY) -m mypy

format: $(STAMP)
	$(VPY) -m ruff format .
	$(VPY) -m ruff check --fix .

test: lint
	$(VPY) -m pytest -q

bench: $(STAMP)
	$(VPY) benchmarks/overhead.py

snapshots: $(STAMP)
	$(VPY) tests/grounded_decision/snapshot_examples.py

lock:
	@$(UV) --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet uv
	$(UV) pip compile pyproject.toml --all-extras --generate-hashes --python-version 3.11 --quiet -o requirements.lock

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
