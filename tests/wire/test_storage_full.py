"""A full disk under --state-dir (issue 13, item 13), through a real server and
real SQLite: the journal's database is capped with `PRAGMA max_page_count`, so
SQLite fails exactly as on a full disk (SQLITE_FULL, "database or disk is
full"). The write is RESOURCE_EXHAUSTED / STORAGE_FULL, not INTERNAL; nothing
acknowledged is lost, nothing unacknowledged is applied, and once there is room
again the same request goes through."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import grpc
from test_session_rpcs import expect_error, state_bytes, upsert

from sidecar.config import Config
from sidecar.state.journal import Journal
from sidecar.v1 import session_service_pb2 as spb


async def _pragma(journal: Journal, sql: str) -> int:
    """Run a PRAGMA on the journal's own connection, on its own thread."""

    def run() -> int:
        assert journal._conn is not None
        row = journal._conn.execute(sql).fetchone()
        return int(row[0]) if row else 0

    return await asyncio.get_running_loop().run_in_executor(journal._executor, run)


def _batch(k: int) -> list:
    return [upsert(f"e{k}-{i}", description=f"{k}:{i} " + "x" * 4000) for i in range(8)]


async def test_disk_full_is_storage_full_and_loses_nothing(make_server: Any, tmp_path: Path) -> None:
    state_dir = str(tmp_path / "state")
    running = await make_server(Config(state_dir=state_dir))
    client = running.client
    await client.open_session("g")
    journal = running.app.store._journal  # type: ignore[attr-defined]
    assert journal is not None
    pages = await _pragma(journal, "PRAGMA page_count")
    await _pragma(journal, f"PRAGMA max_page_count = {pages + 4}")

    acked = 0
    err = None
    for k in range(1, 200):
        try:
            r = await client.apply_deltas("g", acked, _batch(k), delta_id=f"d{k}")
        except grpc.aio.AioRpcError as exc:
            err = exc
            break
        acked = r.revision
    assert err is not None, "the capped journal never filled up"
    failed = acked + 1
    await expect_error(client.apply_deltas("g", acked, _batch(failed), delta_id=f"d{failed}"),
                       grpc.StatusCode.RESOURCE_EXHAUSTED, "STORAGE_FULL")
    assert "full" in (err.details() or "") and "sqlite" not in (err.details() or "").lower()
    state = await client.sessions.GetState(spb.GetStateRequest(session_id="g"))
    assert state.revision == acked
    assert f"e{failed}-0" not in {e.id for e in state.snapshot.entities}

    # Room again: the very same request goes through.
    await _pragma(journal, "PRAGMA max_page_count = 1073741823")
    again = await client.apply_deltas("g", acked, _batch(failed), delta_id=f"d{failed}")
    assert (again.revision, again.replayed) == (failed, False)
    before = await state_bytes(client, "g")
    await running.server.stop("restart")
    restarted = await make_server(Config(state_dir=state_dir))
    reopened = await restarted.client.open_session("g")
    assert reopened.revision == failed
    assert await state_bytes(restarted.client, "g") == before
