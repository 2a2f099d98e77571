# Everything runs from the project's own virtual environment, created on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
BUILD  := build

.PHONY: demo test check bench bench-scale bench-serve accuracy floor phases clean

# (setup.py builds the optional compiled kernel from nbtext/_c/, in place, with the kernel ABI of
# nbtext/features/implementation.py compiled in: docs/kernel.md)
$(STAMP): pyproject.toml setup.py $(wildcard nbtext/_c/*.c nbtext/_c/*.h) nbtext/features/implementation.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]' --config-settings editable_mode=compat
	$(BIN)/python -m compileall -q nbtext
	touch $(STAMP)

## demo: set up, train on the bundled sample, classify the example messages
demo: $(STAMP)
	@mkdir -p $(BUILD)
	$(BIN)/nbtext train data/corpus -o $(BUILD)/demo.nbm
	$(BIN)/nbtext classify -m $(BUILD)/demo.nbm data/example-spam.eml
	$(BIN)/nbtext classify -m $(BUILD)/demo.nbm data/example-ham.eml
	$(BIN)/nbtext info -m $(BUILD)/demo.nbm --top 5

## test: the whole test suite (uses ../shared/data when present), a pytest-xdist worker a core (at most 4)
# (-n auto: tests/conftest.py's pytest_xdist_auto_num_workers; loadgroup keeps an xdist_group on one worker;
# `pytest tests/test_x.py` alone runs in one process)
TESTS_ON_CORES := -n auto --dist loadgroup

test: $(STAMP)
	$(BIN)/python -m pytest -q $(TESTS_ON_CORES)

## check: the quick tier for the edit-test loop (tests marked slow left out; make test runs them)
check: $(STAMP)
	$(BIN)/python -m pytest -q $(TESTS_ON_CORES) -m "not slow"

## accuracy: nbtext and bogofilter side by side on the spamassassin-2002 80/20 split and in 5-fold CV
accuracy: $(STAMP)
	$(BIN)/python scripts/spamassassin_split.py

## bench: speed and memory against bogofilter and scikit-learn (table also in build/bench.md)
# Bytecode as a regular install has it (start-up is part of what is measured; an environment
# with PYTHONDONTWRITEBYTECODE=1 would otherwise compile nbtext's source in every run).
bench: $(STAMP)
	@mkdir -p $(BUILD)
	$(BIN)/python -m compileall -q nbtext
	$(BIN)/python scripts/bench.py > $(BUILD)/bench.md && cat $(BUILD)/bench.md

## bench-scale: nbtext beside fastText and scikit-learn on generated corpora (50 MB and 200 MB with 20
## classes, 50 MB with 500), kept in build/scale/; table in build/bench-scale.md (docs/bench.md, Scale).
## The 1 GB corpus is long (generating it takes minutes, each system's train many): SCALE_MAX=1G make bench-scale
bench-scale: $(STAMP)
	@mkdir -p $(BUILD)
	$(BIN)/python scripts/bench_scale.py

## bench-serve: nbtext serve under 32 concurrent connections beside bogofilter and classify per message, and its memory over 100,000 more (docs/serve.md); BENCH_SERVE="--compare NAME=PATH/bin/nbtext" adds a daemon
bench-serve: $(STAMP)
	@mkdir -p $(BUILD)
	$(BIN)/python scripts/bench_serve.py --long 100000 $(BENCH_SERVE) > $(BUILD)/bench_serve.md && cat $(BUILD)/bench_serve.md

## floor: what tokenizing alone costs, against bench's peers in the same run (docs/floor.md)
floor: $(STAMP)
	@mkdir -p $(BUILD)
	$(BIN)/python scripts/floor.py > $(BUILD)/floor.md && cat $(BUILD)/floor.md

## phases: where train's and predict's wall time goes on spamassassin-2002, phase by phase
phases: $(STAMP)
	@mkdir -p $(BUILD)
	$(BIN)/python scripts/phases.py train ../shared/data/spamassassin-2002 > $(BUILD)/phases.md
	$(BIN)/nbtext train ../shared/data/spamassassin-2002 -o $(BUILD)/phases.nbm -q
	$(BIN)/python scripts/phases.py predict $(BUILD)/phases.nbm ../shared/data/spamassassin-2002 >> $(BUILD)/phases.md
	cat $(BUILD)/phases.md

clean:
	rm -rf $(VENV) $(BUILD) .pytest_cache
	rm -f nbtext/_kernel.*.so
