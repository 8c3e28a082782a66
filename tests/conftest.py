"""Shared test setup: make ``tests/`` importable so tests can ``import reference``."""

import sys
from pathlib import Path

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

# A suite started in the background by a non-interactive shell (`make test &`, a CI script)
# inherits SIGINT ignored, and every process it starts would inherit that too: the tests
# that press Ctrl-C need children that take it as a terminal's user's would.
import signal  # noqa: E402

if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# -- databases: every store test runs on SQLite and on PostgreSQL ----------------------------
import os  # noqa: E402
import secrets  # noqa: E402

import pytest  # noqa: E402

STORES = ["sqlite", "postgresql"]


@pytest.fixture(scope="session")
def pg_server() -> str:
    """The URL of the test PostgreSQL server (NARDY_TEST_PG, set by `make test` / `make pg`).

    Missing, the PostgreSQL tests are skipped on a developer's machine and fail in CI."""
    url = os.environ.get("NARDY_TEST_PG", "")
    if not url:
        message = "NARDY_TEST_PG is not set: run `make test`, or `make pg` and export it"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return url


def fresh_pg_database(server_url: str) -> tuple[str, str]:
    """A new empty database on the test server: (its URL, its name)."""
    import psycopg

    name = f"nardy_test_{secrets.token_hex(6)}"
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    return server_url.rsplit("/", 1)[0] + "/" + name, name


def drop_pg_database(server_url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def pg_db(pg_server):
    """A fresh PostgreSQL database for one test, dropped afterwards."""
    url, name = fresh_pg_database(pg_server)
    yield url
    drop_pg_database(pg_server, name)


@pytest.fixture(params=STORES)
def db(request, tmp_path) -> str:
    """A fresh database for ``nardy serve --db``: an SQLite file, then a PostgreSQL URL."""
    if request.param == "sqlite":
        return str(tmp_path / "arbiter.db")
    return request.getfixturevalue("pg_db")
