"""One table of schema versions for everything solvi keeps in a database.

Each *component* (the store, the journal) has one row in ``solvi_migrations``:
the version of its tables. It also has an ordered list of steps, where step n
takes its tables from version n - 1 to n. `migrate_plan` brings one component
up to date in the caller's transaction, so a store and a journal sharing a
database keep their two versions in one table.

Before this table, each component kept its version in a table of its own
(``solvi_schema_version``, ``journal_version``). Opening such a database carries
that version into ``solvi_migrations`` and drops the old table in the same
transaction, so a crash in between leaves the old layout whole.

Plans are sans-I/O and use the store's ``%s`` placeholders (`solvi._db.store_plans`),
so the backends drive them just as they drive the store's plans.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeGuard

import attrs

if TYPE_CHECKING:
    from solvi._db.store_plans import Dialect, Plan, Statement

__all__ = ["TABLE", "Component", "migrate_plan", "script", "statements", "stored_version_plan"]

#: the one table of versions: a row per component
TABLE = "solvi_migrations"

_CREATE = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} (component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
)
_READ = f"SELECT version FROM {TABLE} WHERE component = %s"
_WRITE = (
    f"INSERT INTO {TABLE} (component, version) VALUES (%s, %s) "
    f"ON CONFLICT (component) DO UPDATE SET version = excluded.version"
)


@attrs.frozen
class Component:
    """A part of solvi that keeps tables in a database, and how those tables change.

    `steps[n - 1]` is a plan maker that takes the component's tables from version
    n - 1 to n, so the version the code supports is the number of steps. A step
    gets the database's dialect and may read rows (to probe what an older release
    left) before it writes.
    """

    #: its key in ``solvi_migrations`` ("store", "journal")
    name: str
    steps: tuple[Callable[[Dialect], Plan[None]], ...]
    #: the one-row table that held its version before ``solvi_migrations``
    legacy_table: str
    #: the error it raises (StoreError, JournalError), from a message
    error: Callable[[str], Exception]
    #: the message for tables newer than the code: (where, found, supported)
    too_new: Callable[[str, int, int], str]

    @property
    def version(self) -> int:
        """The version of its tables that this solvi writes."""
        return len(self.steps)


def statements(*items: Statement) -> Plan[None]:
    """A plan that runs fixed statements in order (a step with nothing to probe)."""
    # Not `yield from items`: the driver sends rows back, which a tuple iterator rejects.
    for item in items:  # noqa: UP028
        yield item


def script(text: str) -> tuple[Statement, ...]:
    """The statements of a SQL script, one per ``;``, without parameters."""
    return tuple((sql.strip(), ()) for sql in text.split(";") if sql.strip())


def _read_plan(component: Component, tables: set[str]) -> Plan[tuple[object, bool]]:
    """The component's stored version as the database holds it (None when there is
    none), and whether it came from ``solvi_migrations`` (else from its old table)."""
    if TABLE in tables:
        rows = yield (_READ, (component.name,))
        if rows:
            return rows[0][0], True
    if component.legacy_table in tables:
        rows = yield (f"SELECT version FROM {component.legacy_table}", ())
        if rows:
            return rows[0][0], False
    return None, False


def _is_version(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _table_names(rows: list[tuple[object, ...]]) -> set[str]:
    return {str(row[0]) for row in rows}


def migrate_plan(component: Component, d: Dialect, where: str) -> Plan[int]:
    """Bring `component`'s tables up to date in the caller's transaction; its version.

    Creates ``solvi_migrations`` when missing, reads the component's version (from
    its old table in a database made before, which is then dropped), runs every
    step above it and writes the new version. On a database already up to date it
    only reads.

    Args:
        where: the file or database, as messages name it.

    Raises:
        StoreError, JournalError (the component's `error`): the tables are newer
            than this solvi, or their version is not a number.
    """
    if d.migrate_lock is not None:
        yield d.migrate_lock
    tables = _table_names((yield (d.tables_sql, ())))
    found, in_table = yield from _read_plan(component, tables)
    current = 0 if found is None else found
    if not _is_version(current):
        msg = (
            f"{component.name} {where} records its version as {current!r}, which is not a "
            f"version number; the table was changed outside solvi: restore it from a backup"
        )
        raise component.error(msg)
    if current > component.version:
        raise component.error(component.too_new(where, current, component.version))
    if TABLE not in tables:
        yield (_CREATE, ())
    for version in range(current + 1, component.version + 1):
        yield from component.steps[version - 1](d)
    if not in_table or current != component.version:
        yield (_WRITE, (component.name, component.version))
    if component.legacy_table in tables:
        yield (f"DROP TABLE {component.legacy_table}", ())
    return component.version


def stored_version_plan(component: Component, tables: set[str], where: str) -> Plan[int | None]:
    """The component's version, read without writing (None when no version is kept, or
    what is kept is not a number: the tables are damaged, and their reader says how).

    Args:
        tables: the names of the database's tables.

    Raises:
        StoreError, JournalError (the component's `error`): the version is newer
            than this solvi.
    """
    found, _ = yield from _read_plan(component, tables)
    if not _is_version(found):
        return None
    if found > component.version:
        raise component.error(component.too_new(where, found, component.version))
    return found
