# Every target installs what it needs: `make test` and `make demo` work on a fresh clone.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
PROTOS  := $(wildcard proto/nardy/v1/*.proto)

.PHONY: install test lint demo bench proto clean browser gnubg node pg pg-stop

install: $(STAMP)

$(STAMP): pyproject.toml setup.py nardy/long/_movegen.c nardy/short/_movegen.c engines/_evaluate.c engines/_network.c engines/_network_short.c
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Generated code is never edited by hand; tests fail if it is stale.
proto: $(STAMP)
	$(BIN)/python -m nardy.protogen

# Headless Chromium and its driver (Debian packages) for the web view's browser test.
browser:
	@if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then \
		echo "installing chromium and chromium-driver (apt-get)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			chromium chromium-driver >/dev/null || echo "could not install chromium"; \
	fi

# GNU Backgammon (Debian's package): the independent oracle for short nardy's legal plays
# (tools/short_oracle.py; tests/short/test_gnubg_oracle.py asks it live when installed).
gnubg:
	@if [ ! -x /usr/games/gnubg ]; then \
		echo "installing gnubg (apt-get)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			gnubg >/dev/null || echo "could not install gnubg"; \
	fi

# The Node.js example engine's packages, exactly as its lock file says (npm ci).
NODE_DIR := examples/node
NODE_STAMP := $(NODE_DIR)/node_modules/.installed
node: $(NODE_STAMP)

$(NODE_STAMP): $(NODE_DIR)/package.json $(NODE_DIR)/package-lock.json
	cd $(NODE_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)

# The tests run every store test on SQLite and on a throwaway PostgreSQL (tools/pg.sh:
# Debian's package via apt-get when missing, loopback only), stopped again afterwards.
test: $(STAMP) proto browser gnubg node
	@url=$$(tools/pg.sh start) && NARDY_TEST_PG=$$url $(BIN)/pytest -q; \
	rc=$$?; tools/pg.sh stop; exit $$rc

# For developers: start the test PostgreSQL and print its URL (export NARDY_TEST_PG=...).
pg:
	@tools/pg.sh start

pg-stop:
	@tools/pg.sh stop

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

demo: $(STAMP) proto
	$(BIN)/nardy demo

bench: $(STAMP) proto
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis $(NODE_DIR)/node_modules
