# The two commands: `make demo` and `make test`. Both set themselves up in .venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint types pytest bench bench-compile image-lock docs reference clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --upgrade pip
	@$(BIN)/python -m pip install --quiet -e '.[test,postgres,firestore]'
	@touch $(STAMP)

demo: $(STAMP)
	@$(BIN)/python examples/demo.py

lint: $(STAMP)
	$(BIN)/ruff check src tests bench examples scripts
	$(BIN)/ruff format --check src tests bench examples scripts

types: $(STAMP)
	$(BIN)/mypy --strict src

# The suite runs on PYTEST_WORKERS processes (pytest-xdist; CI has two cores); 0 runs it in this process.
# pytest exits 5 when it collected no test: that is a broken suite, not a pass.
PYTEST_WORKERS ?= 2
pytest: $(STAMP)
	@$(BIN)/python -m pytest -n $(PYTEST_WORKERS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; exit 1; fi; exit $$rc

test: lint types pytest

# bench/compare.py makes .bench-venv/ (FastMCP from PyPI) on its first run.
bench: $(STAMP)
	$(BIN)/python bench/compare.py

bench-compile: $(STAMP)
	$(BIN)/python bench/compile.py

# Re-pin the generated image's runtime dependencies (src/anvil/bundle/image-lock.json) from this environment.
image-lock: $(STAMP)
	$(BIN)/python scripts/lock_image.py

# The documentation site (build/site), strict: a broken link or anchor fails. `make test` builds it too.
docs: $(STAMP)
	$(BIN)/mkdocs build --strict

# Regenerate docs/reference/ from the registries (codes, CLI flags, variables, _meta keys).
reference: $(STAMP)
	$(BIN)/python scripts/gen_reference.py

clean:
	rm -rf $(VENV) build dist .mypy_cache .ruff_cache
