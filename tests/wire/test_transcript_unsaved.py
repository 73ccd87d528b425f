"""A run's transcript that cannot be journaled (issue 24, item 7), through a
real server, the scripted model and real SQLite: the journal is capped with
`PRAGMA max_page_count`, so SQLite fails as on a full disk (SQLITE_FULL). The
run still ends with RunFinished, and `transcript_unsaved = true` tells the game
that its transcript lives in memory only; the next run whose write succeeds
journals it too, and a restart has it; with no write in between it is gone
after a restart, as docs/runs.md says."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from test_agent_run import collect, narrate
from test_storage_full import _pragma

from sidecar.client import SidecarClient
from sidecar.config import Config, ModelProfile, ScriptConfig
from sidecar.state.journal import Journal
from sidecar.v1 import agent_service_pb2 as apb

#: Big enough that journaling the transcript needs pages the capped database has not got.
REPLIES = [f"Reply {k}: " + "the goblin sings. " * 400 for k in range(1, 5)]


def _config(state_dir: str | None) -> Config:
    script = ScriptConfig(replies=REPLIES, chunk_chars=20_000, chunk_delay_ms=0)
    # The replies are ~7,200 characters: within the output limit the sidecar enforces.
    profile = ModelProfile(model="scripted/unsaved", max_retries=0, script=script, max_output_tokens=2048)
    return Config(profiles={"fake": profile}, default_profile="fake", state_dir=state_dir)


async def _finished(client: SidecarClient, text: str) -> apb.RunFinished:
    events, err = await collect(client, narrate(text, session_id="g"))
    assert err is None, err
    assert events[-1].HasField("finished")
    return events[-1].finished


async def _replies(client: SidecarClient) -> list[str]:
    """The reply numbers the narrator's transcript holds, in order."""
    page = await client.agent.ReadTranscript(apb.ReadTranscriptRequest(session_id="g", page_size=500))
    return [e.text.split(":")[0] for e in page.entries if e.text.startswith("Reply ")]


def _journal(running: Any) -> Journal:
    journal = running.app.store._journal
    assert journal is not None
    return journal


async def _cap(journal: Journal, extra_pages: int | None) -> None:
    pages = await _pragma(journal, "PRAGMA page_count")
    await _pragma(journal, f"PRAGMA max_page_count = {pages + extra_pages if extra_pages is not None else 1073741823}")


async def test_a_run_whose_transcript_cannot_be_journaled_says_so(make_server: Any, tmp_path: Path) -> None:
    state_dir = str(tmp_path / "state")
    running = await make_server(_config(state_dir))
    await running.client.open_session("g")
    assert not (await _finished(running.client, "One.")).transcript_unsaved

    await _cap(_journal(running), 0)  # the disk is full
    unsaved = await _finished(running.client, "Two.")
    assert unsaved.transcript_unsaved and unsaved.finish_reason == apb.FINISH_REASON_STOP
    assert await _replies(running.client) == ["Reply 1", "Reply 2"]  # held in memory

    await _cap(_journal(running), None)  # room again: the next run journals both
    assert not (await _finished(running.client, "Three.")).transcript_unsaved
    await running.server.stop("restart")
    restarted = await make_server(_config(state_dir))
    await restarted.client.open_session("g")
    assert await _replies(restarted.client) == ["Reply 1", "Reply 2", "Reply 3"]


async def test_an_unsaved_transcript_is_gone_after_a_restart_with_no_write_between(
    make_server: Any, tmp_path: Path
) -> None:
    state_dir = str(tmp_path / "state")
    running = await make_server(_config(state_dir))
    await running.client.open_session("g")
    assert not (await _finished(running.client, "One.")).transcript_unsaved
    await _cap(_journal(running), 0)
    assert (await _finished(running.client, "Two.")).transcript_unsaved
    await running.server.stop("restart")
    restarted = await make_server(_config(state_dir))
    await restarted.client.open_session("g")
    assert await _replies(restarted.client) == ["Reply 1"]


async def test_without_a_state_dir_nothing_is_unsaved(make_server: Any) -> None:
    running = await make_server(_config(None))
    await running.client.open_session("g")
    finished = await asyncio.gather(*(_finished(running.client, f"Run {k}.") for k in range(3)))
    assert not any(f.transcript_unsaved for f in finished)
