"""The durable journal behind `--state-dir`: SQLite in WAL mode, written by one
dedicated thread so commits never stall the event loop.

Per session it holds a snapshot (the msgpack of `model.Session` covering
records up to `seq`) plus a tail of records after it (delta batches with their
delta ID and the digest of their ops, replacements, option and extras updates). Writers `submit` statements and
await the returned future, which resolves only after the transaction that
holds them committed; everything submitted while a commit runs goes into the
next transaction together (group commit), in submission order.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import sqlite3
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import msgspec

from sidecar.errors import SidecarError, StorageFull

__all__ = ["Journal", "JournalError", "StoredSession", "Record", "Statement", "commit_error"]

Statement = tuple[str, tuple[Any, ...]]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    snapshot BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS records (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    revision INTEGER NOT NULL,
    delta_id TEXT NOT NULL,
    body BLOB NOT NULL,
    digest BLOB NOT NULL DEFAULT x'',
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
"""

#: Journals written before delta digests were kept have no `digest` column: it is
#: added empty (no rewrite in SQLite), and a record without one replays as before.
_ADD_DIGEST = "ALTER TABLE records ADD COLUMN digest BLOB NOT NULL DEFAULT x''"


log = logging.getLogger("sidecar.state.journal")

#: SQLITE_FULL (13): "database or disk is full", in the low byte of extended codes.
_SQLITE_FULL = 13
_DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)})


class JournalError(SidecarError):
    """The journal could not commit; the change was not applied or acknowledged."""


def commit_error(exc: Exception, path: str) -> SidecarError:
    """The one place that maps SQLite's and the OS's write failures. A full disk
    is StorageFull (a game can tell it from a bug and tell the player); anything
    else is JournalError. The exception's own text stays in the log: it holds
    paths and SQL, not something to hand a game."""
    code = getattr(exc, "sqlite_errorcode", None)
    full = (isinstance(code, int) and code & 0xFF == _SQLITE_FULL) or (
        isinstance(exc, OSError) and exc.errno in _DISK_FULL_ERRNOS
    )
    log.error("journal commit failed", exc_info=exc, extra={"fields": {"path": path, "disk_full": full}})
    if full:
        return StorageFull(
            "the disk holding the state dir is full: the change was not applied; free space and retry"
        )
    return JournalError(f"journal commit failed ({type(exc).__name__}): the change was not applied")


class Record(msgspec.Struct):
    seq: int
    kind: str
    revision: int
    delta_id: str
    body: bytes
    #: codec.ops_digest of a delta batch with a delta ID; b"" otherwise (and in
    #: records written before digests were kept).
    digest: bytes = b""


class StoredSession(msgspec.Struct):
    id: str
    seq: int
    snapshot: bytes
    tail: list[Record]


class Journal:
    def __init__(self, path: str, synchronous: str = "normal") -> None:
        if synchronous.lower() not in ("normal", "full"):
            raise ValueError(f"journal_synchronous must be 'normal' or 'full', not {synchronous!r}")
        self.path = path
        self._synchronous = synchronous.upper()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sidecar-journal")
        self._conn: sqlite3.Connection | None = None
        self._pending: list[tuple[Sequence[Statement], asyncio.Future[None]]] = []
        self._flusher: asyncio.Task[None] | None = None
        #: Commits made and statements written, for stats and benchmarks.
        self.commits = 0

    async def open(self) -> list[StoredSession]:
        """Open (or create) the database and read every stored session."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._open)

    def _open(self) -> list[StoredSession]:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={self._synchronous}")
        conn.executescript(_SCHEMA)
        if "digest" not in {row[1] for row in conn.execute("PRAGMA table_info(records)")}:
            conn.execute(_ADD_DIGEST)
        self._conn = conn
        stored: dict[str, StoredSession] = {}
        for sid, seq, snap in conn.execute("SELECT id, seq, snapshot FROM sessions"):
            stored[sid] = StoredSession(sid, seq, bytes(snap), [])
        rows = conn.execute(
            "SELECT session_id, seq, kind, revision, delta_id, body, digest FROM records ORDER BY session_id, seq"
        )
        for sid, seq, kind, rev, did, body, digest in rows:
            s = stored.get(sid)
            if s is not None and seq > s.seq:
                s.tail.append(Record(seq, kind, rev, did, bytes(body), bytes(digest)))
        return list(stored.values())

    # -- statements ------------------------------------------------------------
    @staticmethod
    def snapshot_stmts(session_id: str, seq: int, snapshot: bytes) -> list[Statement]:
        return [
            ("INSERT OR REPLACE INTO sessions (id, seq, snapshot) VALUES (?, ?, ?)", (session_id, seq, snapshot)),
            ("DELETE FROM records WHERE session_id = ? AND seq <= ?", (session_id, seq)),
        ]

    @staticmethod
    def record_stmt(session_id: str, rec: Record) -> Statement:
        return (
            "INSERT INTO records (session_id, seq, kind, revision, delta_id, body, digest)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (session_id, rec.seq, rec.kind, rec.revision, rec.delta_id, rec.body, rec.digest),
        )

    @staticmethod
    def delete_stmts(session_id: str) -> list[Statement]:
        return [
            ("DELETE FROM sessions WHERE id = ?", (session_id,)),
            ("DELETE FROM records WHERE session_id = ?", (session_id,)),
        ]

    # -- writing ---------------------------------------------------------------
    def submit(self, stmts: Sequence[Statement]) -> asyncio.Future[None]:
        """Queue statements for the next commit; the future resolves once committed."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._pending.append((stmts, fut))
        if self._flusher is None or self._flusher.done():
            self._flusher = loop.create_task(self._flush())
        return fut

    async def _flush(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending:
            group, self._pending = self._pending, []
            try:
                await loop.run_in_executor(self._executor, self._write, [s for s, _ in group])
            except Exception as exc:  # noqa: BLE001 - every waiter learns it failed
                err = commit_error(exc, self.path)
                for _, fut in group:
                    if not fut.done():
                        fut.set_exception(err)
                continue
            for _, fut in group:
                if not fut.done():
                    fut.set_result(None)

    def _write(self, groups: list[Sequence[Statement]]) -> None:
        conn = self._conn
        if conn is None:
            raise RuntimeError("journal is closed")
        conn.execute("BEGIN IMMEDIATE")
        try:
            for stmts in groups:
                for sql, params in stmts:
                    conn.execute(sql, params)
            conn.execute("COMMIT")
        except BaseException:
            # SQLite has already rolled back after some errors (SQLITE_FULL among
            # them); a second ROLLBACK would fail and hide the error that matters.
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self.commits += 1

    async def close(self) -> None:
        """Wait for queued writes, checkpoint and close the database."""
        while self._flusher is not None and not self._flusher.done():
            await self._flusher
        await asyncio.get_running_loop().run_in_executor(self._executor, self._close)
        self._executor.shutdown(wait=True)

    def _close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                self._conn.close()
                self._conn = None
