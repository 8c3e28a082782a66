# Every target installs what it needs: `make test` and `make demo` work on a fresh clone.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
PROTOS  := $(wildcard proto/nardy/v1/*.proto)

.PHONY: install test test-quick lint demo bench proto clean browser gnubg node pg pg-stop \
	soak failover nginx systemd

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

# nginx (Debian's package) for the reverse-proxy test of deploy/nginx-nardy.conf
# (tests/deploy/test_nginx.py runs it in the foreground on loopback; no service is started).
nginx:
	@if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then \
		echo "installing nginx-light (apt-get)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			nginx-light >/dev/null || echo "could not install nginx"; \
	fi

# systemd-analyze (Debian's systemd package) checks deploy/nardy.service offline
# (tests/deploy/test_systemd.py); systemd need not be running.
systemd:
	@if ! command -v systemd-analyze >/dev/null; then \
		echo "installing systemd (apt-get) for systemd-analyze"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			systemd >/dev/null || echo "could not install systemd"; \
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
# Two workers (pytest-xdist), each running whole modules, so a module's fixtures are
# made once.
PARALLEL := -n 2 --dist loadfile
test: $(STAMP) proto browser gnubg node nginx systemd
	@url=$$(tools/pg.sh start) && NARDY_TEST_PG=$$url $(BIN)/pytest -q $(PARALLEL); \
	rc=$$?; tools/pg.sh stop; exit $$rc

# The quick subset for developers: every area, without the tests marked slow (pyproject's
# pytest markers). `make test` runs everything.
test-quick: $(STAMP) proto browser gnubg node
	@url=$$(tools/pg.sh start) && NARDY_TEST_PG=$$url $(BIN)/pytest -q $(PARALLEL) -m "not slow"; \
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

# Hours of a ladder of fast engines on a real `nardy serve` (SQLite): memory, descriptors,
# the journal's size, a restart, nothing lost (bench/soak.py; `nice -n 10 make soak HOURS=2`).
HOURS ?= 2
soak: $(STAMP) proto
	$(BIN)/python -m bench.soak --hours $(HOURS)

# Three instances on the throwaway PostgreSQL under a ladder's load; kill -9 the leader,
# then an owner of games in progress: takeover time, plays lost (bench/failover.py).
failover: $(STAMP) proto
	@url=$$(tools/pg.sh start) && NARDY_TEST_PG=$$url $(BIN)/python -m bench.failover; \
	rc=$$?; tools/pg.sh stop; exit $$rc

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis $(NODE_DIR)/node_modules
