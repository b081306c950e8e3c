# The two commands: `make run` (the app with demo data) and `make test` (lint + whole suite).
# Each creates the virtual environment it needs in .venv/ from a machine with only Python.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test lint format venv clean-db

$(VENV)/.stamp-dev: requirements.txt requirements-dev.txt pyproject.toml scorer/pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	# The scorer (its own distribution, scorer/) and then the project itself, both editable:
	# the apps import from here, and .venv/bin/verity-eval and verity-trec-eval run the
	# scorer from any directory.
	$(PY) -m pip install --quiet --no-deps -e ./scorer
	$(PY) -m pip install --quiet --no-deps -e .
	@touch $@

venv: $(VENV)/.stamp-dev

# The web server and a worker for the background jobs (imports, freezes, scoring); Ctrl-C
# stops both (the trap also stops the worker when the server exits on its own).
run: venv
	$(PY) manage.py migrate --no-input
	HOST=$(HOST) PORT=$(PORT) $(PY) manage.py load_demo
	@trap 'kill $$worker 2>/dev/null; wait $$worker 2>/dev/null' EXIT INT TERM; \
	$(PY) manage.py jobs_worker & worker=$$!; \
	$(PY) manage.py runserver $(HOST):$(PORT)

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache

test: lint
	$(PY) -m pytest $(PYTEST_ARGS)

format: venv
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

clean-db:
	rm -f var/verity.sqlite3 var/verity.sqlite3-wal var/verity.sqlite3-shm
