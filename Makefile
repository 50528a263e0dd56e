# One-command setup: every target installs what it needs, and skips what is already there.
SHELL := /bin/bash
# The Lambda runtime's Python, named once in .python-version (pyenv reads it too; CDK context
# `lambda_python` defaults to it): the venv, the layer and every function use this version.
LAMBDA_PYTHON ?= $(shell cat .python-version)
PYTHON ?= $(shell bash scripts/find_python.sh $(LAMBDA_PYTHON))
VENV := .venv
PY := $(VENV)/bin/python
# The layer `make test` builds and starts the functions on: this machine's architecture (the
# deployed architecture is the CDK context key `architecture`; synth builds that layer itself).
ARCH ?= $(shell uname -m | sed -e 's/aarch64/arm64/')
STAMPS := .stamps
# The features folder `make dev` serves (MCP_FEATURES_DIR, as python -m local reads it) and its
# optional requirements.txt: the app's own dependencies, installed into the venv (make setup) as
# the layer build installs the deployed folder's (scripts/layer.py, from the lock files).
FEATURES_DIR := $(or $(MCP_FEATURES_DIR),functions/endpoint/mcp_tools)
FEATURES_REQUIREMENTS := $(wildcard $(FEATURES_DIR)/requirements.txt)
# One stamp per features folder: pointing MCP_FEATURES_DIR at another installs that one's.
FEATURES_STAMP := $(STAMPS)/features-$(LAMBDA_PYTHON)-$(subst /,_,$(FEATURES_DIR))
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export CDK_DISABLE_CLI_TELEMETRY := true
export AWS_EC2_METADATA_DISABLED := true
export PIP_DISABLE_PIP_VERSION_CHECK := 1
export LAMBDA_PYTHON
export NO_MKDOCS_2_WARNING := 1
# The browser the MCP Inspector test drives: the system's Chromium (`make browser`).
CHROMIUM ?= /usr/bin/chromium
export CHROMIUM

.PHONY: help setup test test-fast conformance synth deploy verify lint imports bench dev dev-second clean layer lock docs browser inspector-demo

help:
	@echo "make test    set up (venv, pip, npm, layer, Chromium) and run the whole test suite, conformance and the docs build included"
	@echo "make conformance  the MCP conformance suite over two local instances behind round-robin (server and OAuth facade)"
	@echo "make dev     run the whole platform locally on an embedded AWS emulator"
	@echo "make inspector-demo  the MCP Inspector's web UI signing in through the local OAuth facade (headless Chromium; screenshots in build/inspector-demo)"
	@echo "make synth   synthesize the CloudFormation templates offline into cdk.out"
	@echo "make deploy  cdk deploy into the account of your current AWS credentials"
	@echo "make verify URL=<endpoint …/mcp> KEY=<API key> [STACK=<stack>]  prove a deployment works (without STACK: the running make dev)"
	@echo "make lint    ruff, mypy, the import contracts and cfn-lint"
	@echo "make imports  the import contracts of the layers (pyproject.toml, run by make lint and make test)"
	@echo "make bench   benchmarks (ratios against peers run in the same script)"
	@echo "make docs    build the documentation site (strict: broken links fail) into build/site"
	@echo "make lock    re-resolve the layer's dependencies into the hashed lock files (per architecture)"
	@echo "make clean   remove everything the targets built"

$(STAMPS):
	@mkdir -p $(STAMPS)

$(STAMPS)/venv-$(LAMBDA_PYTHON): .python-version requirements.txt requirements-dev.txt layers/platform/requirements.txt | $(STAMPS)
	@test -n "$(PYTHON)" || exit 2
	@$(PY) -c "import sys; sys.exit('%d.%d' % sys.version_info[:2] != '$(LAMBDA_PYTHON)')" 2>/dev/null || { rm -rf $(VENV); $(PYTHON) -m venv $(VENV); }
	set -o pipefail; $(PY) -m pip install -q --upgrade pip 2>&1 | { grep -v "^WARNING: Location" || true; }
	set -o pipefail; $(PY) -m pip install -q -r requirements-dev.txt 2>&1 | { grep -v "^WARNING: Location" || true; }
	$(PY) -c "import aws_cdk, moto, mcp, amazondax, aws_lambda_powertools, uvicorn, jwt, cryptography"
	@touch $@

$(FEATURES_STAMP): $(FEATURES_REQUIREMENTS) $(STAMPS)/venv-$(LAMBDA_PYTHON)
	$(if $(FEATURES_REQUIREMENTS),set -o pipefail; $(PY) -m pip install -q -r $(FEATURES_REQUIREMENTS) 2>&1 | { grep -v "^WARNING: Location" || true; })
	@touch $@

$(STAMPS)/npm: package.json package-lock.json | $(STAMPS)
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(STAMPS)/layer-$(ARCH)-$(LAMBDA_PYTHON): layers/platform/requirements-$(ARCH).lock scripts/layer.py $(STAMPS)/venv-$(LAMBDA_PYTHON)
	$(PY) scripts/layer.py build $(ARCH)
	@touch $@

# What Lambda's managed runtime provides beside the layer (/var/runtime): the runtime interface
# client and boto3, compiled as the runtime ships them; the tests start the event functions with it
# (tests/support/lambda_runtime.py).
$(STAMPS)/lambda-runtime-$(LAMBDA_PYTHON): tests/support/lambda-runtime-requirements.txt $(STAMPS)/venv-$(LAMBDA_PYTHON)
	rm -rf build/lambda-runtime
	set -o pipefail; $(PY) -m pip install -q -t build/lambda-runtime -r $< 2>&1 | { grep -v "^WARNING: Location" || true; }
	@touch $@

setup: $(STAMPS)/venv-$(LAMBDA_PYTHON) $(FEATURES_STAMP) $(STAMPS)/npm $(STAMPS)/layer-$(ARCH)-$(LAMBDA_PYTHON) $(STAMPS)/lambda-runtime-$(LAMBDA_PYTHON)

layer: $(STAMPS)/layer-$(ARCH)-$(LAMBDA_PYTHON)

lock: $(STAMPS)/venv-$(LAMBDA_PYTHON)
	$(PY) scripts/layer.py lock

test: setup browser
	$(MAKE) --no-print-directory imports
	$(PY) -m pytest -q -n 2 --dist loadgroup
	$(PY) -m local.conformance
	set -o pipefail; $(VENV)/bin/mkdocs build 2>&1 | { grep -v "^INFO" || true; }

# Debian's Chromium when there is none (about 20 s; as root or with sudo): the MCP Inspector test
# drives its web UI with it (tests/integration/local/test_local_oauth_facade.py), and fails without it.
browser:
	@test -x "$(CHROMIUM)" || { \
	  command -v apt-get >/dev/null || { echo "no Chromium at $(CHROMIUM): install one and set CHROMIUM" >&2; exit 2; }; \
	  echo "installing Debian's chromium (no Chromium at $(CHROMIUM))"; \
	  sudo=$$(test "$$(id -u)" = 0 || echo sudo); \
	  $$sudo apt-get update -qq && \
	  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; }
	@test -x "$(CHROMIUM)" || { echo "no Chromium at $(CHROMIUM) after installing Debian's package" >&2; exit 2; }

# The MCP Inspector's web UI (pinned in package.json) signing in through the local OAuth facade
# with no registration and calling echo, in a headless Chromium; one screenshot per step is kept.
inspector-demo: setup browser
	rm -rf build/inspector-demo
	$(PY) -m pytest -q --basetemp=build/inspector-demo \
	  "tests/integration/local/test_local_oauth_facade.py::test_the_mcp_inspector_signs_in_with_no_registration_and_calls_echo"
	@echo "screenshots: $$(ls -d build/inspector-demo/*current/screenshots)"

# The layers of mcp_platform (docs/architecture/index.md), as import-linter contracts in pyproject.toml.
imports: $(STAMPS)/venv-$(LAMBDA_PYTHON)
	PYTHONPATH=layers/platform/python $(VENV)/bin/lint-imports --no-cache

docs: $(STAMPS)/venv-$(LAMBDA_PYTHON)
	set -o pipefail; $(VENV)/bin/mkdocs build 2>&1 | { grep -v "^INFO" || true; }

# Two instances on one emulator behind a round-robin proxy; fails on any required scenario that
# fails without an entry in local/conformance/expected-failures.yaml, and on a stale entry. Then
# the authorization-server scenarios against two instances serving the OAuth facade (every check
# must pass; local/conformance/authorization.py).
conformance: setup
	$(PY) -m local.conformance

test-fast: $(STAMPS)/venv-$(LAMBDA_PYTHON)
	$(PY) -m pytest -q -m "not infra and not slow"

synth: setup
	npx cdk synth -q

deploy: setup
	npx cdk deploy --all

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy layers/platform/python functions stacks app.py local examples scripts bench
	$(MAKE) --no-print-directory imports
	npx cdk synth -q
	$(VENV)/bin/cfn-lint cdk.out/*.template.json

# Proves a deployment works (python -m mcp_platform.ops verify: a report and an exit code). STACK
# names the deployed stack, whose operations environment and alarms are read with your AWS
# credentials; without it, the running `make dev` (LOCAL_AWS_PORT) is verified. The key is not echoed.
URL ?= http://127.0.0.1:$(or $(MCP_PORT),8000)/mcp
verify: $(STAMPS)/venv-$(LAMBDA_PYTHON)
	@test -n "$(KEY)$(MCP_API_KEY)" || { echo "usage: make verify URL=<endpoint URL …/mcp> KEY=<API key> [STACK=<stack name>]" >&2; exit 2; }
	@$(if $(STACK),PYTHONPATH=layers/platform/python $(PY) -m mcp_platform.ops --stack "$(STACK)",$(PY) -m local.ops) \
	  verify --url "$(URL)" $(if $(KEY),--key "$(KEY)")

bench: setup
	$(PY) bench/run.py

dev: setup
	$(PY) -m local

dev-second: $(STAMPS)/venv-$(LAMBDA_PYTHON) $(FEATURES_STAMP)
	$(PY) -m local --attach

clean:
	rm -rf $(VENV) node_modules cdk.out build $(STAMPS) .pytest_cache .mypy_cache .ruff_cache
