"""SQL access for the revision log: schema, point reads, snapshot lists, history and compaction.

All methods are synchronous and run in worker threads; the asyncio side never blocks on SQL.
Revisions are assigned by the database (SQLite ``AUTOINCREMENT`` / PostgreSQL ``BIGSERIAL``) inside
one serialised writer transaction, so commit order equals revision order and a reader that takes
``max(id)`` first and then filters ``id <= max`` sees a consistent snapshot on either backend.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Connection,
    Engine,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    create_engine,
    event,
    text,
)

metadata = MetaData()

kv_log = Table(
    "kv_log",
    metadata,
    # AUTOINCREMENT on SQLite: ids must never be reused after compaction deletes the newest rows.
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("space", String(253), nullable=False),
    Column("resource", String(317), nullable=False),
    Column("namespace", String(63), nullable=False),
    Column("name", String(253), nullable=False),
    Column("created", Boolean, nullable=False),
    Column("deleted", Boolean, nullable=False),
    Column("prev_revision", BigInteger, nullable=False),
    Column("value", LargeBinary, nullable=False),
    sqlite_autoincrement=True,
)
Index("kv_log_key", kv_log.c.space, kv_log.c.resource, kv_log.c.namespace, kv_log.c.name, kv_log.c.id)
# Indexes the log had once and must not keep. kv_log_space_ns (space, namespace, id) served a namespace's
# clean-up (kv_log_key's space range serves it now, reading the space's index entries), but PostgreSQL chose it
# for the writer's look-up of a key's newest row whenever the table's statistics did not yet show the key's
# namespace (a new database, a new space or namespace until autovacuum analyses again): both indexes then
# estimate one row, the smaller wins, and every create read every row of its namespace (measured: 10 million
# rows read for 4,500 creates, 95 % of PostgreSQL's CPU). Without it, appends also maintain one index less.
OBSOLETE_INDEXES = ("kv_log_space_ns",)

kv_state = Table(
    "kv_state",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", BigInteger, nullable=False),
)


# Records the hub keeps for itself in the log (shared by every hub process, never served as objects) live
# in this pseudo-space: no Space can be named so, and indexes of spaces never see them.
INTERNAL_SPACE = ".internal"


class Key(NamedTuple):
    space: str
    resource: str  # group-qualified plural, e.g. "deployments.apps"
    namespace: str  # "" for cluster-scoped objects
    name: str


def shared_key(space: str, resource: str, namespace: str, name: str) -> Key:
    """A key whose strings are the ones every other key naming the same space, kind, namespace or name holds
    (``sys.intern``): indexes and caches keep thousands of keys per space, and every space holds objects of the same
    names (its ``default`` namespace, its default roles), so a key read or written costs a tuple, not four strings
    of its own."""
    return Key(sys.intern(space), sys.intern(resource), sys.intern(namespace), sys.intern(name))


def right_sized(value: bytes) -> bytes:
    """``value`` in an allocation of its own length, for a row kept after its write.

    ``orjson.dumps`` returns bytes whose allocation is its growing buffer's, not shrunk to the length (4 KiB for
    any short document, 8 KiB for 700 bytes, 32 KiB for 3,000 with orjson 3.13; ``sys.getsizeof`` shows the length
    only). The watch ring and the writer's recent rows keep tens of thousands of committed rows: kept as written,
    their buffers were most of an empty space's memory at 10,000 spaces (see docs/benchmarks.md, "Spaces at scale:
    what limits it"). A copy costs a ``memcpy`` of the length, once per write."""
    return bytes(memoryview(value))


@dataclass(frozen=True, slots=True)
class LogRow:
    revision: int
    key: Key
    created: bool
    deleted: bool
    prev_revision: int
    value: bytes


class Compacted(Exception):
    """The requested revision is older than the compaction horizon."""

    def __init__(self, requested: int, compacted: int) -> None:
        super().__init__(f"revision {requested} is compacted (oldest available: {compacted})")
        self.requested = requested
        self.compacted = compacted


class PreconditionFailed(Exception):
    """A write's expectation about the current revision of its key did not hold."""

    def __init__(self, key: Key, current: int) -> None:
        super().__init__(f"{key} is at revision {current}")
        self.key = key
        self.current = current


_COLUMNS = "id, space, resource, namespace, name, created, deleted, prev_revision, value"
# The newest row of one key, ordered as the kv_log_key index is: PostgreSQL's generic plan for a prepared
# "ORDER BY id DESC LIMIT 1" walks the primary key backwards instead, through every row when the key is new.
_NEWEST_OF_KEY = "ORDER BY space DESC, resource DESC, namespace DESC, name DESC, id DESC LIMIT 1"


# PostgreSQL's writer statements take arrays of the columns, one element a key or row. The newest (id, deleted)
# of each key, in the keys' order; ``also``: more columns.
PG_LATEST = (
    "SELECT l.id, l.deleted{also} FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[]) "
    "WITH ORDINALITY AS k(s, r, n, m, i) LEFT JOIN LATERAL (SELECT id, deleted FROM kv_log WHERE "
    f"space = k.s AND resource = k.r AND namespace = k.n AND name = k.m {_NEWEST_OF_KEY}) l ON true "
    "ORDER BY k.i"
)
# Append rows, numbered in their order; ``unless``: a condition under which nothing is appended.
PG_APPEND = (
    "INSERT INTO kv_log (space, resource, namespace, name, created, deleted, prev_revision, value) "
    "SELECT s, r, n, m, c, d, p, v FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], "
    "%s::bool[], %s::bool[], %s::bigint[], %s::bytea[]) WITH ORDINALITY AS t(s, r, n, m, c, d, p, v, i) "
    "{unless}ORDER BY i RETURNING id"
)
# The optimistic writer's read: each key's newest row and, in the same statement (so from the same snapshot), the
# log's newest id. Revisions are assigned and committed in order under the writers' lock, so every row that read
# did not see has a greater id.
PG_LATEST_AND_NEWEST = PG_LATEST.format(also=", (SELECT COALESCE(MAX(id), 0) FROM kv_log)")
# The optimistic writer's append, run once the writers' lock is held. It appends nothing at all if any of these keys
# has a row newer than that read: whether the read is still current, the preconditions having been checked against
# it. Each key's rows are looked for through kv_log_key (5 to 10 µs of the server's CPU a key, under the lock) only if
# anything at all was appended since the read: never while one process writes alone. Each appended id comes with the
# newest revision before them (the statement's snapshot does not see its own rows), and one notice, its payload the
# last of them; nothing appended, nothing is returned and no one is told, so the transaction writes nothing and its
# commit flushes nothing.
PG_APPEND_UNLESS_CHANGED = (
    "WITH appended AS (" + PG_APPEND.format(
        unless="WHERE (SELECT MAX(id) FROM kv_log) = %s::bigint OR NOT EXISTS (SELECT 1 FROM "
               "unnest(%s::text[], %s::text[], %s::text[], %s::text[]) AS g(s, r, n, m) JOIN kv_log l ON "
               "l.space = g.s AND l.resource = g.r AND l.namespace = g.n AND l.name = g.m AND l.id > %s::bigint) ")
    + ") SELECT a.id, p.prior FROM appended a, (SELECT COALESCE(MAX(id), 0) AS prior FROM kv_log) p, "
    "(SELECT pg_notify(%s, MAX(id)::text) FROM appended HAVING COUNT(*) > 0) n"
)


_L_COLUMNS = ", ".join("l." + c.strip() for c in _COLUMNS.split(","))  # a row's columns, of the row named l
_KEY_COLUMNS = "space, resource, namespace, name"

# A follower's read of the rows after a revision, up to another: each comes with the revision the log was compacted
# to, from the same snapshot, so a compaction that removed rows this read needs cannot go unseen (read apart, one
# could commit between the two reads). No row found, the answer is that revision alone. ``after`` and ``upto``: the
# driver's placeholders.
TAIL = (
    f"SELECT c.v, {_L_COLUMNS} FROM (SELECT COALESCE((SELECT value FROM kv_state WHERE key = 'compact_revision'), "
    "0) AS v) c LEFT JOIN kv_log l ON l.id > {after} AND l.id <= {upto} ORDER BY l.id"
)


def _row(r: Any) -> LogRow:
    return LogRow(int(r[0]), shared_key(r[1], r[2], r[3], r[4]), bool(r[5]), bool(r[6]), int(r[7]), bytes(r[8]))


# SQLite's ``instr`` on a BLOB compares the needle at every offset, one ``memcmp`` call each: looking for the start-up
# markers in the 250 MB of values that 10,000 spaces hold took it 0.5-0.8 s of a start's CPU. Python's bytes search
# (``in``) skips ahead; called once per row, the same look costs about a tenth of that.
HOLDS = "spacehub_holds"


def _holds(value: bytes, needle: bytes) -> bool:
    return needle in value


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30},
                               pool_size=8, max_overflow=8)

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            # FULL: a commit returns only after the WAL is fsynced, so an acknowledged write
            # survives a crash or power loss (NORMAL would only survive a process crash).
            cur.execute("PRAGMA synchronous=FULL")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()
            dbapi_conn.create_function(HOLDS, 2, _holds, deterministic=True)

        return engine
    # Room for every read thread, the writer and the status records at once: a connection beyond the pool
    # is opened and closed per use, and a PostgreSQL connection is a new server process each time.
    return create_engine(url, pool_size=16, max_overflow=8, pool_pre_ping=True)


# PostgreSQL advisory locks are (namespace, id) pairs; the namespace is drawn from the schema (below).
SCHEMA_LOCK, WRITER_LOCK, LEASE_LOCK = 0, 1, 2


def pg_namespace(conn: Connection) -> tuple[int, str]:
    """The advisory-lock namespace and NOTIFY channel of the schema ``conn`` works in.

    Locks and notification channels are per database, not per schema: hubs kept apart by schema (a
    ``search_path``) in one database must not take each other's locks or hear each other's commits.
    """
    schema = str(conn.execute(text("SELECT current_schema()")).scalar())
    digest = hashlib.sha256(schema.encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF, f"spacehub_log_{digest[:8].hex()}"


def create_schema(engine: Engine, tables: MetaData, obsolete_indexes: tuple[str, ...] = ()) -> None:
    """Create the tables that do not exist yet and drop ``obsolete_indexes`` where they still exist; on
    PostgreSQL serialised, so that hub processes starting together on an empty database do not race each
    other's CREATE TABLE."""
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:n, :i)"),
                         {"n": pg_namespace(conn)[0], "i": SCHEMA_LOCK})
        tables.create_all(conn)
        for index in obsolete_indexes:
            conn.execute(text(f"DROP INDEX IF EXISTS {index}"))


class LogStore:
    """Reads and maintenance of the revision log; writes go through a writer (``apiserver.store.writer``)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        self.is_postgres = self.engine.dialect.name == "postgresql"
        # The writer's two statements (the newest row of each key; append rows), each for a whole batch: every
        # statement the writer thread runs costs it a wait for the GIL, which the event loop's thread holds
        # under load (up to the 5 ms switch interval each time). PostgreSQL takes arrays of the columns;
        # SQLite one JSON array of the rows (values as JSON strings, which round-trip their UTF-8 bytes
        # exactly), answers the look-up as one JSON row, and numbers inserted rows consecutively (one writer,
        # AUTOINCREMENT).
        if self.is_postgres:
            self.batch_statements = (PG_LATEST.format(also=""), PG_APPEND.format(unless=""))
        else:
            field = "json_extract(k.value, '$[{}]')".format
            self.batch_statements = (
                "SELECT json_group_array(json_array(k.key, (SELECT id * 2 + deleted FROM kv_log WHERE "
                f"space = {field(0)} AND resource = {field(1)} AND namespace = {field(2)} AND name = {field(3)} "
                "ORDER BY id DESC LIMIT 1))) FROM json_each(?) AS k",
                "INSERT INTO kv_log (space, resource, namespace, name, created, deleted, prev_revision, value) "
                f"SELECT {', '.join(field(i) for i in range(7))}, CAST({field(7)} AS BLOB) FROM json_each(?) AS k "
                "ORDER BY k.key",
            )
        create_schema(self.engine, metadata, OBSOLETE_INDEXES)
        # Where several hub processes share the database: their advisory-lock namespace and NOTIFY channel.
        self.lock_namespace, self.channel = 0, ""
        if self.is_postgres:
            with self.engine.connect() as conn:
                self.lock_namespace, self.channel = pg_namespace(conn)
        self._compacted_lock = threading.Lock()
        self._compacted = self._read_state("compact_revision")

    def close(self) -> None:
        self.engine.dispose()

    @property
    def psycopg_params(self) -> dict[str, Any]:
        """psycopg's connect arguments for this store's PostgreSQL database, for the connections held outside the
        pool, each for one task (the writer's, the feed's)."""
        _args, params = self.engine.dialect.create_connect_args(self.engine.url)
        return {k: v for k, v in params.items() if k != "context"}  # psycopg's own adapters

    # --- state -----------------------------------------------------------------------------

    def _read_state(self, key: str, conn: Connection | None = None) -> int:
        if conn is None:
            with self.engine.connect() as own:
                return self._read_state(key, own)
        return int(conn.execute(text("SELECT value FROM kv_state WHERE key = :k"), {"k": key}).scalar() or 0)

    @property
    def compacted_revision(self) -> int:
        with self._compacted_lock:
            return self._compacted

    def refresh_compacted_revision(self) -> int:
        value = self._read_state("compact_revision")
        with self._compacted_lock:
            self._compacted = max(self._compacted, value)
            return self._compacted

    def current_revision(self, conn: Connection | None = None) -> int:
        sql = text("SELECT COALESCE(MAX(id), 0) FROM kv_log")
        if conn is not None:
            return int(conn.execute(sql).scalar() or 0)
        with self.engine.connect() as c:
            return int(c.execute(sql).scalar() or 0)

    def free_bytes(self) -> int | None:
        """Free space on the SQLite database's filesystem; None on PostgreSQL, whose disk is not ours to see."""
        database = self.engine.url.database
        if self.is_postgres or not database or database == ":memory:":
            return None
        fs = os.statvfs(os.path.dirname(os.path.abspath(database)))
        return fs.f_bavail * fs.f_frsize

    def ping(self) -> None:
        """A round trip to the database: raises when it cannot be reached."""
        with self.engine.connect() as conn:
            conn.execute(text("SELECT 1"))

    def probe_write(self) -> None:
        """Commit the smallest write there is (a counter in ``kv_state``): whether the database takes writes."""
        with self.engine.begin() as conn:
            conn.execute(text("INSERT INTO kv_state (key, value) VALUES ('write_probe', 1) "
                              "ON CONFLICT (key) DO UPDATE SET value = kv_state.value + 1"))

    # --- point reads -------------------------------------------------------------------------

    @staticmethod
    def latest_in(conn: Connection, key: Key) -> LogRow | None:
        r = conn.execute(text(
            f"SELECT {_COLUMNS} FROM kv_log WHERE space = :s AND resource = :r AND namespace = :n "
            f"AND name = :m {_NEWEST_OF_KEY}"),
            {"s": key.space, "r": key.resource, "n": key.namespace, "m": key.name}).first()
        return _row(r) if r is not None else None

    def get(self, key: Key) -> LogRow | None:
        """The current row of a key, or None if it does not exist (never created, or deleted)."""
        with self.engine.connect() as conn:
            row = self.latest_in(conn, key)
        return None if row is None or row.deleted else row

    def get_revision(self, revision: int) -> LogRow | None:
        with self.engine.connect() as conn:
            r = conn.execute(text(f"SELECT {_COLUMNS} FROM kv_log WHERE id = :i"), {"i": revision}).first()
        return _row(r) if r is not None else None

    # --- lists -------------------------------------------------------------------------------

    def list(self, space: str, resource: str | None, namespace: str | None, *, at: int | None = None,
             after: tuple[str, str] | None = None, limit: int | None = None,
             name: str | None = None) -> tuple[int, list[LogRow]]:
        """Live objects as of revision ``at`` (default: now), ordered by (namespace, name).

        Returns the snapshot revision with the rows. ``after`` resumes a paged list after that
        (namespace, name); ``resource`` None lists every kind (namespace and space clean-up).
        """
        with self.engine.connect() as conn:
            rev = self._snapshot(conn, at)
            live, params = _live_rows(space, resource, namespace, rev, after, name)
            sql = f"SELECT {_L_COLUMNS} {live} ORDER BY l.namespace, l.name, l.resource"
            if limit is not None:
                sql += " LIMIT :lim"
                params["lim"] = limit
            rows = [_row(r) for r in conn.execute(text(sql), params)]
        return rev, rows

    def count(self, space: str, resource: str, namespace: str | None, *, at: int,
              after: tuple[str, str] | None = None) -> int:
        """How many live objects ``list`` would return at revision ``at`` after ``after`` (a paged list's
        ``remainingItemCount``)."""
        with self.engine.connect() as conn:
            rev = self._snapshot(conn, at)
            live, params = _live_rows(space, resource, namespace, rev, after, None)
            return int(conn.execute(text(f"SELECT COUNT(*) {live}"), params).scalar_one())

    def _snapshot(self, conn: Connection, at: int | None) -> int:
        """The revision a read at ``at`` sees (now when None); refused when ahead of the store or compacted."""
        current = self.current_revision(conn)
        if at is not None and at > current:
            raise ValueError(f"revision {at} is ahead of the store ({current})")
        compacted = self.compacted_revision
        if at is not None and at < compacted:
            raise Compacted(at, compacted)
        return current if at is None else at

    def list_resource_everywhere(self, resource: str, name: str | None = None) -> list[LogRow]:
        """Live objects of one kind in every space (startup of in-memory indexes); ``name``: only those so named
        (every namespace's ``default`` ServiceAccount)."""
        return [_row(r) for r in self._of_resource_everywhere(_L_COLUMNS, resource, name)]

    def keys_everywhere(self, resource: str) -> list[Key]:
        """The keys of the live objects of one kind in every space (startup of an index that needs no values)."""
        return [shared_key(*r) for r in self._of_resource_everywhere("l.space, l.resource, l.namespace, l.name",
                                                                     resource)]

    def _of_resource_everywhere(self, columns: str, resource: str, name: str | None = None) -> list[Any]:
        params: dict[str, Any] = {"r": resource, "f": False}
        where = "resource = :r AND id <= :rev"
        if name is not None:
            where += " AND name = :m"
            params["m"] = name
        with self.engine.connect() as conn:
            params["rev"] = self.current_revision(conn)
            sql = f"SELECT {columns} {_newest_live(where, 'space, namespace, name')}"
            return list(conn.execute(text(sql), params))

    def list_spaces_rows(self, containing: Sequence[bytes] = ()) -> Iterator[LogRow]:
        """Every live object in every space (startup indexing); not the hub's internal records. ``containing``:
        only those whose stored value holds any of these byte strings (the database looks, the other rows are
        never read)."""
        params: dict[str, Any] = {"f": False, "internal": INTERNAL_SPACE}
        if containing:
            found = "position(:needle{i} in l.value) > 0" if self.is_postgres else f"{HOLDS}(l.value, :needle{{i}})"
            params.update({f"needle{i}": needle for i, needle in enumerate(containing)})
            # The rows holding a marker first, then whether each is its key's newest: few rows hold one, and
            # finding every key's newest row first (below) costs a pass over every key and a look-up per row
            # (measured with 10,000 spaces: 0.65 s of CPU against 1.2 s; only when nearly every row holds a
            # marker is this way slower, by a fifth).
            sql = (f"SELECT {_L_COLUMNS} FROM kv_log l WHERE l.id <= :rev AND l.space != :internal AND l.deleted = :f "
                   f"AND ({' OR '.join(found.format(i=i) for i in range(len(containing)))}) AND NOT EXISTS "
                   "(SELECT 1 FROM kv_log n WHERE n.space = l.space AND n.resource = l.resource AND "
                   "n.namespace = l.namespace AND n.name = l.name AND n.id > l.id AND n.id <= :rev)")
        else:
            sql = f"SELECT {_L_COLUMNS} {_newest_live('id <= :rev AND space != :internal', _KEY_COLUMNS)}"
        with self.engine.connect() as conn:
            params["rev"] = self.current_revision(conn)
            for r in conn.execute(text(sql), params):
                yield _row(r)

    def count_by_resource(self) -> dict[str, int]:
        """Live objects of every space by resource (``deployments.apps``), the hub's internal records excepted:
        one pass over the key index, for metrics (callers keep the answer a while; it reads every key)."""
        sql = f"SELECT l.resource, COUNT(*) {_newest_live('space != :internal', _KEY_COLUMNS)} GROUP BY l.resource"
        with self.engine.connect() as conn:
            return {str(resource): int(count) for resource, count in
                    conn.execute(text(sql), {"internal": INTERNAL_SPACE, "f": False})}

    # --- history -----------------------------------------------------------------------------

    def history(self, after: int, *, space: str | None = None, resource: str | None = None,
                limit: int = 1000) -> list[LogRow]:
        """Log rows with revision > ``after``, oldest first; Compacted if ``after`` is too old."""
        compacted = self.compacted_revision
        if after < compacted:
            raise Compacted(after, compacted)
        where = ["id > :after"]
        params: dict[str, Any] = {"after": after, "lim": limit}
        if space is not None:
            where.append("space = :s")
            params["s"] = space
        if resource is not None:
            where.append("resource = :r")
            params["r"] = resource
        with self.engine.connect() as conn:
            rows = conn.execute(text(
                f"SELECT {_COLUMNS} FROM kv_log WHERE {' AND '.join(where)} ORDER BY id LIMIT :lim"), params)
            out = [_row(r) for r in rows]
        # Rows compacted while we read would make the answer incomplete: check again.
        if after < self.refresh_compacted_revision():
            raise Compacted(after, self.compacted_revision)
        return out

    def rows_between(self, after: int, upto: int) -> list[LogRow]:
        """Every row with ``after < revision <= upto``, oldest first (what another hub process committed).

        Compacted when rows above ``after`` may already have been removed: a process that fell that far
        behind cannot follow the log any more and must start afresh.
        """
        with self.engine.connect() as conn:
            return self.tail_rows(after, conn.execute(text(TAIL.format(after=":a", upto=":u")),
                                                      {"a": after, "u": upto}))

    def tail_rows(self, after: int, found: Iterable[Any]) -> list[LogRow]:
        """The rows a ``TAIL`` read after ``after`` found, oldest first; Compacted if the revision the log was
        compacted to (each answer's first column) is above ``after``: rows the read needs may be gone."""
        rows, compacted = [], 0
        for r in found:
            compacted = int(r[0])
            if r[1] is not None:  # None: the one answer of a read that found no row
                rows.append(_row(r[1:]))
        with self._compacted_lock:
            self._compacted = max(self._compacted, compacted)
        if after < compacted:
            raise Compacted(after, compacted)
        return rows

    # --- compaction --------------------------------------------------------------------------

    def compact(self, keep: int) -> int:
        """Drop superseded rows and tombstones older than ``current - keep``; returns the horizon."""
        with self.engine.begin() as conn:
            current = self.current_revision(conn)
            horizon = current - keep
            if horizon <= self.compacted_revision:
                return self.compacted_revision
            # A row at or below the horizon is needed only if it is the newest row of its key
            # at the horizon and is not a tombstone: lists at revisions >= horizon read exactly those.
            # What the last compaction kept below its horizon was all such rows, so only rows written since
            # can make one superfluous: a tombstone, or a row naming its key's row before it (prev_revision,
            # which the writer sets to that row's revision, or 0 after a tombstone or for a new key). Reading
            # just those keeps a compaction's cost to the rows written since, not every row the hub holds.
            since = self._read_state("compact_revision", conn)  # another process's compactions count too
            # Two statements, superseded rows first: SQLite, deleting the tombstones in the same statement, would
            # no longer see the revisions they name.
            conn.execute(text(
                "DELETE FROM kv_log WHERE id IN (SELECT n.prev_revision FROM kv_log n "
                "WHERE n.id > :p AND n.id <= :h AND n.prev_revision > 0)"), {"h": horizon, "p": since})
            conn.execute(text("DELETE FROM kv_log WHERE id > :p AND id <= :h AND deleted = :t"),
                         {"h": horizon, "p": since, "t": True})
            if self.is_postgres:
                conn.execute(text(
                    "INSERT INTO kv_state (key, value) VALUES ('compact_revision', :h) "
                    "ON CONFLICT (key) DO UPDATE SET value = GREATEST(kv_state.value, EXCLUDED.value)"),
                    {"h": horizon})
            else:
                conn.execute(text(
                    "INSERT INTO kv_state (key, value) VALUES ('compact_revision', :h) "
                    "ON CONFLICT (key) DO UPDATE SET value = MAX(kv_state.value, excluded.value)"),
                    {"h": horizon})
        with self._compacted_lock:
            self._compacted = max(self._compacted, horizon)
            return self._compacted


def _live_rows(space: str, resource: str | None, namespace: str | None, rev: int, after: tuple[str, str] | None,
               name: str | None) -> tuple[str, dict[str, Any]]:
    """``FROM … WHERE …`` selecting the newest row of every key of the space (one kind, one namespace, one
    name, past ``after``) as of ``rev`` that is not a tombstone, with its parameters."""
    where = ["space = :s", "id <= :rev"]
    params: dict[str, Any] = {"s": space, "rev": rev, "f": False}
    group = "namespace, name"
    if resource is not None:
        where.append("resource = :r")
        params["r"] = resource
    else:
        group = "resource, namespace, name"
    if namespace is not None:
        where.append("namespace = :n")
        params["n"] = namespace
    if name is not None:
        where.append("name = :m")
        params["m"] = name
    if after is not None:
        where.append("(namespace > :an OR (namespace = :an AND name > :am))")
        params["an"], params["am"] = after
    return _newest_live(" AND ".join(where), group), params


def _newest_live(where: str, group: str) -> str:
    """``FROM … WHERE …`` selecting, as ``l``, the newest row of every key among the rows ``where`` selects
    (``group``: the key's columns those rows do not all share), unless it is a tombstone (``:f`` is False)."""
    return (f"FROM kv_log l JOIN (SELECT MAX(id) AS mid FROM kv_log WHERE {where} GROUP BY {group}) m "
            "ON l.id = m.mid WHERE l.deleted = :f")
