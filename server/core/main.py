"""The core's run: open the store, restore the games, serve the edge on the link until the
edge closes it, then commit what was accepted and close the store.

``nardy serve`` runs it in a process of its own (``python -m server.core``, started by the
edge); :class:`server.app.EmbeddedServer` in a thread of the same process.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable

import trio

from server.config import ServerConfig
from server.core.api import Api
from server.core.arbiter import Arbiter
from server.core.cluster import Cluster
from server.core.link import EdgeLink
from server.core.pgstore import PostgresStore
from server.core.principals import new_token, token_hash
from server.core.statements import set_setting
from server.core.store import Reader, SQLiteStore, SQLStore
from server.link import MAX_FRAME

log = logging.getLogger("nardy.server")

ADMIN_HASH = "admin_token_hash"


def open_store(db: str) -> SQLStore:
    """The store for ``--db``: a ``postgresql://`` URL, or an SQLite file path."""
    if db.startswith(("postgresql://", "postgres://")):
        return PostgresStore(db)
    return SQLiteStore(db)


async def admin_hash(config: ServerConfig, store: SQLStore) -> str:
    """The operator token's hash: from the given token, else the stored one, else a new
    token printed once (to stderr, never to the log)."""
    if config.admin_token:
        digest = token_hash(config.admin_token)
        await store.write([set_setting(ADMIN_HASH, digest)])
        return digest
    stored = await Reader(store).setting(ADMIN_HASH)
    if stored:
        return stored
    token = new_token()
    await store.write([set_setting(ADMIN_HASH, token_hash(token))])
    print(
        f"nardy serve: operator (admin) token, shown only this once: {token}\n"
        "  keep it, e.g. export NARDY_ADMIN_TOKEN=<token>, for `nardy admin ...`",
        file=sys.stderr,
        flush=True,
    )
    return token_hash(token)


def tokens_for_edge(arbiter: Arbiter) -> bytes:
    """The filter of every token issued, for the edge to refuse made-up ones by itself
    (empty: it asks the core; several instances, or a filter too big for one frame)."""
    if not arbiter.owner.issues_every_token:
        return b""
    tokens = arbiter.roster.issued.dump()
    if len(tokens) > MAX_FRAME // 2:
        log.warning("%d tokens: the edge asks the core of each new one", len(arbiter.roster.issued))
        return b""
    return tokens


async def run(
    config: ServerConfig,
    stream: trio.abc.Stream,
    *,
    store_factory: Callable[[str], SQLStore] = open_store,
    task_status=trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the edge on ``stream`` until it closes; ``task_status.started`` gets the
    arbiter once its games are restored and the edge is told it is ready."""
    store = await trio.to_thread.run_sync(store_factory, config.db)
    cluster = None
    try:
        if isinstance(store, PostgresStore):
            cluster = Cluster(store.url, config.lease_s)
            cluster.address = config.advertise or f"{config.host}:{config.port}"
            await trio.to_thread.run_sync(cluster.open)
        arbiter = Arbiter(
            store,
            admin_hash=await admin_hash(config, store),
            policy=config.policy,
            cluster=cluster,
        )
    except BaseException:
        with trio.CancelScope(shield=True):
            if cluster is not None:
                await cluster.close()
            await store.close()
        raise
    link = EdgeLink(stream)
    arbiter.arrivals.fence = link.fence
    arbiter.roster.on_issued = link.issued
    # the edge stamps on CLOCK_MONOTONIC, the core's clock is trio's
    api = Api(arbiter, link.taps, offset=trio.current_time() - time.perf_counter())
    restored = False
    async with trio.open_nursery() as nursery:
        try:
            await nursery.start(arbiter.run)
            restored = True
            link.ready(cluster.id if cluster is not None else "", tokens_for_edge(arbiter))
            log.info(
                "core serving db=%s registration=%s%s",
                store.name,
                "open" if config.registration_open else "closed",
                f" instance={cluster.id} lease={cluster.lease_s:g}s" if cluster else "",
            )
            task_status.started(arbiter)
            await link.serve(api)
        finally:
            with trio.CancelScope(shield=True):
                log.info("core stopping")
                if restored:
                    arbiter.ladders.keep_books()  # (the next start counts no result again)
                await arbiter.writer.close()  # what was accepted is committed first
                if cluster is not None:
                    await cluster.close()  # the others take our games over at once
                await store.close()
            nursery.cancel_scope.cancel()
