"""`PostgresStore`: a store in a PostgreSQL database (psycopg 3, imported when opened)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from solvi._db.migrations import migrate_plan
from solvi._db.store_plans import POSTGRES, STORE, Plan, PlanStore, Row, T, drive, inspect_plan
from solvi.errors import StoreError

if TYPE_CHECKING:
    import psycopg
    import psycopg_pool

__all__ = ["PostgresStore", "arun_pooled", "describe_dsn", "pg_execute", "reaching", "run_pooled"]


def describe_dsn(dsn: str) -> str:
    """host:port/database of a DSN, without the password, for messages."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts = conninfo_to_dict(dsn)
    except Exception:  # a DSN libpq cannot parse is reported by connect itself
        return "(unparsable DSN)"
    host = parts.get("host") or "localhost"
    port = parts.get("port") or "5432"
    return f"{host}:{port}/{parts.get('dbname') or parts.get('user') or '?'}"


@contextmanager
def reaching(what: str, where: str, error: Callable[[str], Exception]) -> Iterator[None]:
    """Turn psycopg's "the server went away or refused the session" errors (a server
    stopped or restarted, a network cut, a pool that found no connection in time, a
    full disk on the server) into `error`, naming `what` ("PostgreSQL store", ...) at
    `where` and what to do. Errors about the statements themselves pass through."""
    import psycopg

    try:
        yield
    except psycopg.OperationalError as exc:
        reason = " ".join(str(exc).split())
        msg = (
            f"{what} {where} could not be reached or written: {reason}; check that the "
            f"server is up, reachable and has room, then try again"
        )
        raise error(msg) from exc


def run_pooled(
    pool: psycopg_pool.ConnectionPool[Any],
    run: Callable[[psycopg.Connection[Any]], T],
    *,
    transaction: bool = True,
) -> T:
    """`run(conn)` on a connection of `pool`, in one transaction (or, `transaction=False`,
    outside one: for reads, which may run twice).

    A session that ended while the pool held it (a server restart, sessions ended by
    an administrator) is found by the first statement sent on it, the BEGIN (or the
    read), which then has done nothing: the pool checks its other idle connections,
    replacing the dead ones, and `run` gets a fresh connection, once. Nothing else runs
    twice: a connection that breaks after the BEGIN, during the transaction or its
    COMMIT, raises (once the COMMIT may have been sent, whether it was kept is unknown).
    While the server stays away, the second attempt waits the pool's timeout for a
    connection, then raises.
    """
    import psycopg

    for last in (False, True):
        with pool.connection() as conn, contextlib.ExitStack() as tx:
            try:
                if not transaction:
                    return run(conn)
                tx.enter_context(conn.transaction())
            except psycopg.OperationalError:
                if last or not conn.broken:
                    raise
            else:
                return run(conn)
        pool.check()
    raise AssertionError("unreachable: the second attempt returns or raises")


async def arun_pooled(
    pool: psycopg_pool.AsyncConnectionPool[Any],
    run: Callable[[psycopg.AsyncConnection[Any]], Awaitable[T]],
) -> T:
    """`run_pooled` on an async pool, in one transaction."""
    import psycopg

    for last in (False, True):
        async with pool.connection() as conn, contextlib.AsyncExitStack() as tx:
            try:
                await tx.enter_async_context(conn.transaction())
            except psycopg.OperationalError:
                if last or not conn.broken:
                    raise
            else:
                return await run(conn)
        await pool.check()
    raise AssertionError("unreachable: the second attempt returns or raises")


class PostgresStore(PlanStore):
    """A store in a PostgreSQL database, shared by processes and machines.

    Sync methods use a `psycopg_pool.ConnectionPool`. The ``a``-prefixed
    methods use an `AsyncConnectionPool`, opened on the first call on the
    running asyncio loop; on another loop, or under trio, they run the sync
    method in a worker thread instead. Appends lock the audit head row
    (``SELECT ... FOR UPDATE``), so writers on any number of connections
    extend one chain. After a server restart, a call that meets one of the
    pools' ended sessions runs on a fresh connection instead (`run_pooled`),
    so no call fails for it.

    Tables are created in the connection's default schema; pick another with
    the DSN (``?options=-csearch_path%3Dmyschema``).

    Args:
        dsn: a libpq connection string or ``postgresql://`` URL.
        max_size: at most this many connections per pool.
        connect_timeout: seconds to wait for the server when opening.
        read_only: open an existing store without writing: every session is
            read only (``default_transaction_read_only``), no schema is created
            or migrated, and writes raise.

    Raises:
        StoreError: psycopg is not installed, the server cannot be reached, or
            the schema is newer than this solvi; read only, also when the
            database has none of solvi's tables.
    """

    _dialect = POSTGRES

    def __init__(
        self,
        dsn: str,
        *,
        max_size: int = 8,
        connect_timeout: float = 10.0,
        read_only: bool = False,
    ) -> None:
        try:
            import psycopg
            import psycopg_pool
        except ImportError as exc:
            msg = (
                f"PostgresStore needs psycopg 3 and psycopg-pool ({exc.name} is missing); "
                f"install them with: pip install 'solvi[postgres]'"
            )
            raise StoreError(msg) from exc
        self.dsn = dsn
        self.read_only = read_only
        self._where = describe_dsn(dsn)
        try:
            with psycopg.connect(
                dsn, autocommit=True, connect_timeout=max(1, round(connect_timeout))
            ) as conn:
                if read_only:
                    _read_only_session(conn)
                    self.schema_version: int | None = drive(
                        pg_execute(conn), inspect_plan(POSTGRES, self._where)
                    )
                else:
                    with conn.transaction():
                        self.schema_version = drive(
                            pg_execute(conn), migrate_plan(STORE, POSTGRES, self._where)
                        )
        except psycopg.OperationalError as exc:
            reason = " ".join(str(exc).split())
            msg = (
                f"cannot connect to PostgreSQL store {self._where}: {reason}; check "
                f"that the server runs and the DSN (host, port, user, database) is right"
            )
            raise StoreError(msg) from exc
        self._pool: psycopg_pool.ConnectionPool[Any] | None = psycopg_pool.ConnectionPool(
            dsn,
            min_size=1,
            max_size=max_size,
            kwargs={"autocommit": True},
            configure=_read_only_session if read_only else None,
            open=True,
            name="solvi",
            timeout=connect_timeout * 3,
        )
        self._max_size = max_size
        self._timeout = connect_timeout * 3
        self._apool: psycopg_pool.AsyncConnectionPool[Any] | None = None
        self._apool_loop: asyncio.AbstractEventLoop | None = None
        self._apool_keeper: asyncio.Task[None] | None = None
        self._alock = threading.Lock()

    def __repr__(self) -> str:
        return f"PostgresStore({self._where!r})"

    def _sync_pool(self) -> psycopg_pool.ConnectionPool[Any]:
        pool = self._pool
        if pool is None:
            msg = f"PostgreSQL store {self._where} is closed; open a new one"
            raise StoreError(msg)
        return pool

    def _run(self, plan: Plan[T], *, write: bool) -> T:
        if write:
            self._check_writable()
        import psycopg

        pool = self._sync_pool()
        try:
            with reaching("PostgreSQL store", self._where, StoreError):
                return run_pooled(pool, lambda conn: drive(pg_execute(conn), plan))
        except (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn) as exc:
            if write:
                raise
            # A table or column gone: the store is damaged, which its caller reports.
            reason = " ".join(str(exc).split())
            msg = f"PostgreSQL store {self._where} cannot be read: {reason}"
            raise StoreError(msg) from exc

    async def _async_pool(self) -> psycopg_pool.AsyncConnectionPool[Any] | None:
        """The async pool of the running asyncio loop, or None (trio, or another loop)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return None
        self._sync_pool()
        if self._apool is None:
            from psycopg_pool import AsyncConnectionPool

            with self._alock:
                if self._apool is not None:
                    return self._apool if self._apool_loop is loop else None
                pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
                    self.dsn,
                    min_size=1,
                    max_size=self._max_size,
                    kwargs={"autocommit": True},
                    configure=_aread_only_session if self.read_only else None,
                    open=False,
                    name="solvi-async",
                    timeout=self._timeout,
                )
                self._apool, self._apool_loop = pool, loop
            await pool.open()
            self._apool_keeper = loop.create_task(
                _close_with_its_loop(pool), name="solvi-async-pool-keeper"
            )
        return self._apool if self._apool_loop is loop else None

    async def _arun(self, plan: Plan[T], *, write: bool) -> T:
        if write:
            self._check_writable()
        pool = await self._async_pool()
        if pool is None:

            def run() -> T:
                return self._run(plan, write=write)

            return await anyio.to_thread.run_sync(run)
        with reaching("PostgreSQL store", self._where, StoreError):
            return await self._arun_on(pool, plan)

    async def _arun_on(self, pool: psycopg_pool.AsyncConnectionPool[Any], plan: Plan[T]) -> T:
        async def run(conn: psycopg.AsyncConnection[Any]) -> T:
            try:
                statement = next(plan)
                while True:
                    cur = await conn.execute(*statement)
                    rows = await cur.fetchall() if cur.description is not None else []
                    statement = plan.send(rows)
            except StopIteration as done:
                result: T = done.value
                return result

        return await arun_pooled(pool, run)

    def close(self) -> None:
        """Close both pools; from the loop that ran async methods, use `aclose` instead.

        Raises:
            StoreError: called on the event loop that owns the async pool.
        """
        apool, loop = self._apool, self._apool_loop
        if apool is not None and loop is not None and not loop.is_closed():
            try:
                running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is loop:
                msg = (
                    f"PostgresStore {self._where}: close() cannot close the async pool from "
                    f"the event loop that uses it; use `await store.aclose()` there"
                )
                raise StoreError(msg)
            if loop.is_running():
                asyncio.run_coroutine_threadsafe(apool.close(), loop).result(self._timeout)
                keeper = self._apool_keeper
                if keeper is not None:
                    loop.call_soon_threadsafe(keeper.cancel)
        # A pool whose loop has ended has no tasks left to stop: dropping it is enough.
        self._apool = self._apool_loop = self._apool_keeper = None
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    async def aclose(self) -> None:
        """Close both pools without blocking the event loop."""
        apool, loop = self._apool, self._apool_loop
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if apool is not None and loop is running:
            keeper = self._apool_keeper
            self._apool = self._apool_loop = self._apool_keeper = None
            if keeper is not None:
                keeper.cancel()
            await apool.close()
        await anyio.to_thread.run_sync(self.close)

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def _close_with_its_loop(pool: psycopg_pool.AsyncConnectionPool[Any]) -> None:
    """Wait until the loop shuts down, then close the async pool.

    A script's `asyncio.run` (or `anyio.run`) ends by cancelling every task left and
    waiting for them all. psycopg_pool's worker tasks swallow a cancellation that lands
    while they open a connection (a pool growing, or filling up to its minimum) and go
    back to waiting for work, so that wait never ended and the script hung at exit.
    Closing the pool sends them the stop they wait for. This task belongs to the pool,
    as the pool's own tasks do, and lives as long as it: `aclose` and `close` cancel it.
    """
    try:
        await asyncio.get_running_loop().create_future()
    finally:
        await pool.close()


def _read_only_session(conn: psycopg.Connection[Any]) -> None:
    """Make every transaction of this session read only: the server refuses writes."""
    conn.execute("SET default_transaction_read_only = on")


async def _aread_only_session(conn: psycopg.AsyncConnection[Any]) -> None:
    """`_read_only_session` for the async pool."""
    await conn.execute("SET default_transaction_read_only = on")


def pg_execute(conn: psycopg.Connection[Any]) -> Callable[[str, tuple[Any, ...]], list[Row]]:
    """How a plan's statement runs on a PostgreSQL connection, for the store and for
    the journal's plans alike."""

    def execute(sql: str, params: tuple[Any, ...]) -> list[Row]:
        cur = conn.execute(sql, params)
        return cur.fetchall() if cur.description is not None else []

    return execute
