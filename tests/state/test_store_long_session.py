"""A long session in the journal (issue 23): a run's record holds what the run
changed, not the session's history; transcript compaction is journaled and
comes back after a restart; the events cap counts what it drops."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import msgspec
import pytest

from sidecar.config import StateLimits
from sidecar.errors import StorageFull
from sidecar.state import ops as o
from sidecar.state.journal import JournalError
from sidecar.state.model import ActorUsage, Event, TranscriptEntry, TranscriptSummary
from sidecar.state.store import JOURNAL_FILE, SessionStore

NO_SNAPSHOTS = {"journal_compact_records": 1_000_000, "journal_compact_bytes": 1 << 40}


async def reopen(tmp_path: Path, **limits: object) -> SessionStore:
    s = SessionStore(StateLimits(**limits), str(tmp_path))  # type: ignore[arg-type]
    await s.start()
    return s


def record_sizes(tmp_path: Path, kind: str) -> list[int]:
    with sqlite3.connect(tmp_path / JOURNAL_FILE) as db:
        rows = db.execute("SELECT length(body) FROM records WHERE kind = ? ORDER BY seq", (kind,)).fetchall()
    return [n for (n,) in rows]


def one_run(store: SessionStore, sid: str, i: int) -> None:
    """What a run leaves in the session: two entries, usage, notes."""
    s = store.get(sid)
    log = s.transcripts.setdefault("npc", [])
    log.append(TranscriptEntry(role="player", text=f"Line {i:05d} from the player.", speaker_id="pc"))
    log.append(TranscriptEntry(role="actor", text=f"Reply {i:05d} from the merchant.", speaker_id="npc"))
    usage = s.usage.setdefault("npc", ActorUsage())
    usage.runs += 1
    usage.prompt_tokens += 100
    s.notes["npc"] = f"notes after run {i:05d}"


async def test_a_runs_journal_record_does_not_grow_with_the_history(tmp_path: Path) -> None:
    store = await reopen(tmp_path, **NO_SNAPSHOTS)
    await store.open("g")
    for i in range(400):
        one_run(store, "g", i)
        await store.persist_extras("g")
    sizes = record_sizes(tmp_path, "run")
    assert len(sizes) == 400
    # The record of run 400 is the size of run 10's (only the start index grows by a byte or two).
    assert sizes[-1] - sizes[10] <= 4, (sizes[10], sizes[-1])
    expected = msgspec.msgpack.encode(store.get("g"))
    await store.aclose()
    back = await reopen(tmp_path)
    assert msgspec.msgpack.encode(back.get("g")) == expected
    assert len(back.get("g").transcripts["npc"]) == 800
    await back.aclose()


async def test_nothing_changed_writes_no_record(tmp_path: Path) -> None:
    store = await reopen(tmp_path, **NO_SNAPSHOTS)
    await store.open("g")
    one_run(store, "g", 1)
    await store.persist_extras("g")
    await store.persist_extras("g")
    assert len(record_sizes(tmp_path, "run")) == 1
    await store.aclose()


async def test_a_failed_run_record_raises_and_the_next_one_carries_it(tmp_path: Path) -> None:
    store = await reopen(tmp_path, **NO_SNAPSHOTS)
    s, _ = await store.open("g")
    journal = store._journal
    assert journal is not None
    real_write = journal._write

    def full(groups: object) -> None:
        raise OSError(28, "No space left on device")

    one_run(store, "g", 1)
    journal._write = full  # type: ignore[method-assign]
    with pytest.raises(StorageFull):
        await store.persist_extras("g")
    journal._write = real_write  # type: ignore[method-assign]
    one_run(store, "g", 2)
    await store.persist_extras("g")
    expected = msgspec.msgpack.encode(s)
    await store.aclose()
    back = await reopen(tmp_path)
    assert msgspec.msgpack.encode(back.get("g")) == expected
    assert [e.text for e in back.get("g").transcripts["npc"]][::2] == [
        "Line 00001 from the player.",
        "Line 00002 from the player.",
    ]
    await back.aclose()


async def test_a_transcript_compaction_is_journaled_and_survives_a_restart(tmp_path: Path) -> None:
    store = await reopen(tmp_path, **NO_SNAPSHOTS)
    await store.open("g")
    for i in range(10):
        one_run(store, "g", i)
        await store.persist_extras("g")
    one_run(store, "g", 10)  # not persisted yet: the compaction journals it first
    entries = store.get("g").transcripts["npc"]
    summary = TranscriptSummary(text="npc_1 sold pc a lamp.", summarised=12)
    assert await store.compact_transcript("g", "npc", entries, 12, summary)
    s = store.get("g")
    assert len(s.transcripts["npc"]) == 22 - 12
    assert s.transcripts["npc"][0].text == "Line 00006 from the player."
    one_run(store, "g", 11)
    await store.persist_extras("g")
    expected = msgspec.msgpack.encode(s)
    await store.aclose()
    back = await reopen(tmp_path)
    assert msgspec.msgpack.encode(back.get("g")) == expected
    assert back.get("g").summaries["npc"] == summary
    # A snapshot (journal compaction) holds it too.
    await back.aclose()
    again = await reopen(tmp_path, journal_compact_records=1)
    await again.apply("g", 0, "", [o.RecordEvent(Event("tick"))])
    await again.aclose()
    last = await reopen(tmp_path)
    assert last.get("g").summaries["npc"] == summary and len(last.get("g").transcripts["npc"]) == 12
    await last.aclose()


async def test_a_compaction_of_a_replaced_transcript_changes_nothing(tmp_path: Path) -> None:
    store = await reopen(tmp_path)
    await store.open("g")
    one_run(store, "g", 1)
    stale = store.get("g").transcripts["npc"]
    store.get("g").transcripts["npc"] = list(stale)  # an import put another list there
    assert not await store.compact_transcript("g", "npc", stale, 1, TranscriptSummary("x", 1))
    assert len(store.get("g").transcripts["npc"]) == 2 and not store.get("g").summaries
    await store.aclose()


async def test_a_failed_compaction_record_changes_nothing(tmp_path: Path) -> None:
    store = await reopen(tmp_path)
    await store.open("g")
    one_run(store, "g", 1)
    entries = store.get("g").transcripts["npc"]
    journal = store._journal
    assert journal is not None

    def broken(groups: object) -> None:
        raise OSError(5, "I/O error")

    journal._write = broken  # type: ignore[method-assign]
    with pytest.raises(JournalError):
        await store.compact_transcript("g", "npc", entries, 1, TranscriptSummary("x", 1))
    assert store.get("g").transcripts["npc"] is entries and not store.get("g").summaries


async def test_the_events_cap_counts_what_it_drops(tmp_path: Path) -> None:
    store = await reopen(tmp_path, max_events=4)
    s, _ = await store.open("g")
    for i in range(7):
        await store.apply("g", i, "", [o.RecordEvent(Event(f"tick {i}"))])
    assert [e.text for e in s.world.events] == ["tick 3", "tick 4", "tick 5", "tick 6"]
    assert s.world.events_dropped == 3
    await store.aclose()
    back = await reopen(tmp_path, max_events=4)
    assert back.get("g").world.events_dropped == 3
    await back.aclose()
