"""Shared test setup: signals for child processes, the databases every store test runs on,
and the one arbiter fixture."""

import os
import secrets
import signal
from typing import NoReturn

import pytest

# A suite started in the background by a non-interactive shell (`make test &`, a CI script)
# inherits SIGINT ignored, and every process it starts would inherit that too: the tests
# that press Ctrl-C need children that take it as a terminal's user's would.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def missing(message: str) -> NoReturn:
    """A tool the test needs is not here: skipped on a developer's machine, failed in CI
    (where `make test` installs everything)."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


# -- databases: every store test runs on SQLite and on PostgreSQL ----------------------------
STORES = ["sqlite", "postgresql"]


@pytest.fixture(scope="session")
def pg_server() -> str:
    """The URL of the test PostgreSQL server (NARDY_TEST_PG, set by `make test` / `make pg`).

    Missing, the PostgreSQL tests are skipped on a developer's machine and fail in CI."""
    url = os.environ.get("NARDY_TEST_PG", "")
    if not url:
        missing("NARDY_TEST_PG is not set: run `make test`, or `make pg` and export it")
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


# -- the arbiter ----------------------------------------------------------------------------


@pytest.fixture
def arbiter(request, tmp_path):
    """A real arbiter for one test: ``EmbeddedServer`` (its edge and core in threads of this
    process) on an ephemeral loopback port, journaling to a fresh SQLite file.

    Indirect parametrisation names the store instead (``"postgresql"``: a fresh database;
    every server test runs on each, tests/server/conftest.py). ``@pytest.mark.arbiter(**kw)``
    on a test or a module passes server options (``http_port=0``, ``admin_token=...``)."""
    from server.app import EmbeddedServer

    store = getattr(request, "param", "sqlite")
    db = str(tmp_path / "arbiter.db") if store == "sqlite" else request.getfixturevalue("pg_db")
    marker = request.node.get_closest_marker("arbiter")
    # No heartbeat among the events a test reads, however slow the machine.
    options = {"heartbeat_s": 30.0, **(marker.kwargs if marker else {})}
    with EmbeddedServer(db=db, **options) as srv:
        yield srv
