"""A long session over gRPC (issue 23): transcripts compacted by the configured
summary profile in the background, journaled (a real restart keeps the summary)
and shown by PreviewPrompt; every cap reports what it dropped in left_out."""

from __future__ import annotations

from pathlib import Path

import pytest
from waits import eventually
from world import World

from sidecar.config import Config, ModelProfile, ScriptConfig, StateLimits, TranscriptConfig
from sidecar.errors import InvalidRequest
from sidecar.v1 import agent_service_pb2 as apb

NPC, PC, INN = "BP_Merchant_C_1", "PLAYER_1", "LOC_Inn_1"
SUMMARY = "npc_1 sold player_1 a brass lamp and promised a map of the north road."


def config(tmp_path: Path, *, summary_delay_ms: float = 0.0, **transcripts: int) -> Config:
    fake = ModelProfile(model="scripted/talk", max_retries=0, script=ScriptConfig(chunk_delay_ms=0, replies=["Aye."]))
    summariser = ModelProfile(
        model="scripted/summary",
        max_retries=0,
        first_token_timeout_s=600,
        total_timeout_s=600,
        script=ScriptConfig(chunk_delay_ms=0, first_token_delay_ms=summary_delay_ms, replies=[SUMMARY]),
    )
    cfg = TranscriptConfig(summary_profile="sum", **transcripts)  # type: ignore[arg-type]
    return Config(
        profiles={"fake": fake, "sum": summariser},
        default_profile="fake",
        transcripts=cfg,
        state_dir=str(tmp_path / "state"),
        state=StateLimits(max_events=4),
    )


def talk(i: int) -> apb.RunRequest:
    line = apb.DialogueInput(speaker_id=PC, text=f"Line {i}: any lamps today?")
    return apb.RunRequest(session_id="g", actor_id=NPC, dialogue=line)


async def setup(client) -> int:  # type: ignore[no-untyped-def]
    await client.open_session("g")
    world = World().entity(INN, "location", "The Flagon").entity(NPC, name="Maerwyn", at=INN)
    return await world.entity(PC, "player", "Aren", at=INN).send(client, "g", 0)


async def run(client, request: apb.RunRequest) -> str:  # type: ignore[no-untyped-def]
    last = ""
    async for event in client.run(request):
        last = event.WhichOneof("kind")
    return last


async def preview(client) -> apb.PreviewPromptResponse:  # type: ignore[no-untyped-def]
    reply: apb.PreviewPromptResponse = await client.agent.PreviewPrompt(apb.PreviewPromptRequest(run=talk(99)))
    return reply


async def test_compaction_is_journaled_survives_a_restart_and_is_previewed(make_server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    first = await make_server(config(tmp_path, compact_after_entries=8, keep_entries=4, max_entries=50))
    await setup(first.client)
    for i in range(5):  # 10 entries: past 8
        assert await run(first.client, talk(i)) == "finished"
    compactor = first.app.runs.compactor
    await eventually(lambda: compactor.done == 1, what="a compaction stored")
    session = first.app.store.get("g")
    assert len(session.transcripts[NPC]) == 4 and session.summaries[NPC].summarised == 6
    shown = await preview(first.client)
    system = shown.messages[0].content
    assert "## Earlier in this conversation" in system and SUMMARY in system
    assert "Line 0:" not in "".join(m.content for m in shown.messages)  # folded into the summary
    assert any(s.name == "transcript_summary" for s in shown.sections)
    assert [(lo.kind, lo.count) for lo in shown.left_out if lo.section == "history"] == [("transcript_entry", 6)]
    # The summary's spend is counted, apart from the runs' (issue 31, item 3).
    (stats,) = (await first.client.get_info(include_stats=True)).stats
    spent = (stats.summaries, stats.summary_completion_tokens)
    assert stats.runs == 5 and stats.completion_tokens == 5 and spent == (1, len(SUMMARY.split()))
    assert stats.summary_prompt_tokens > 0
    await first.server.stop("restart")

    second = await make_server(config(tmp_path, compact_after_entries=8, keep_entries=4, max_entries=50))
    again = await preview(second.client)
    assert SUMMARY in again.messages[0].content
    assert [m.content for m in again.messages] == [m.content for m in shown.messages]
    (kept,) = (await second.client.get_info(include_stats=True)).stats  # journaled with the compaction
    assert (kept.runs, kept.summaries, kept.summary_completion_tokens) == (5, 1, len(SUMMARY.split()))
    page = await second.client.agent.ReadTranscript(apb.ReadTranscriptRequest(session_id="g", actor_id=NPC))
    assert (page.total, page.first_index, [e.index for e in page.entries]) == (10, 6, [6, 7, 8, 9])
    # The summary as the game shows it: display names, never the model's aliases.
    assert page.summary == "Maerwyn sold Aren a brass lamp and promised a map of the north road."
    assert [m.entity_id for m in page.summary_mentions] == [NPC, PC] and not page.summary_model_text


async def test_a_slow_summary_never_holds_a_run_up(make_server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    running = await make_server(
        config(tmp_path, summary_delay_ms=600_000, compact_after_entries=4, keep_entries=2, max_entries=50)
    )
    await setup(running.client)
    for i in range(3):
        assert await run(running.client, talk(i)) == "finished"
    compactor = running.app.runs.compactor
    await eventually(lambda: bool(compactor._tasks), what="a compaction under way")
    for i in range(3, 6):  # runs go on while the summary call waits for its first token
        assert await run(running.client, talk(i)) == "finished"
    assert compactor._tasks and compactor.done == 0
    assert len(running.app.store.get("g").transcripts[NPC]) == 12


async def test_the_transcript_cap_and_the_events_cap_report_what_they_dropped(make_server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    running = await make_server(config(tmp_path, compact_after_entries=0, max_entries=6))
    revision = await setup(running.client)
    for i in range(6):
        revision = await World().event(f"Cart {i} rolls by.", at=INN).send(running.client, "g", revision)
    for i in range(4):  # 8 entries: 2 past the cap
        assert await run(running.client, talk(i)) == "finished"
    await eventually(lambda: len(running.app.store.get("g").transcripts[NPC]) == 6, what="the cap applied")
    shown = await preview(running.client)
    left = {(lo.kind, lo.count): lo.reason for lo in shown.left_out if lo.section == "history"}
    assert "max_entries" in left[("transcript_entry", 2)]
    assert "events cap" in left[("world_event", 2)]


async def test_read_transcript_shows_display_names_model_text_only_on_debug(make_server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    cfg = config(tmp_path, compact_after_entries=0, max_entries=50)
    cfg.profiles["fake"].script.replies = ["npc_1 glares at player_1 and pockets the lamp."]
    running = await make_server(cfg)
    await setup(running.client)
    assert await run(running.client, talk(1)) == "finished"
    request = apb.ReadTranscriptRequest(session_id="g", actor_id=NPC)
    page = await running.client.agent.ReadTranscript(request)
    player, reply = page.entries
    assert player.text == "Line 1: any lamps today?" and not player.mentions
    assert reply.text == "Maerwyn glares at Aren and pockets the lamp."
    spans = [(m.entity_id, reply.text.encode()[m.start : m.start + m.length].decode()) for m in reply.mentions]
    assert spans == [(NPC, "Maerwyn"), (PC, "Aren")]
    assert not reply.model_text and "npc_1" not in str(page)
    request.include_model_text = True
    debug = await running.client.agent.ReadTranscript(request)
    assert debug.entries[1].model_text == "npc_1 glares at player_1 and pockets the lamp."
    assert debug.entries[1].text == reply.text


async def test_a_failing_summary_is_retried_only_as_the_transcript_grows(make_server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    cfg = config(tmp_path, compact_after_entries=20, keep_entries=4, max_entries=50)
    # The summary profile's provider is down (nothing listens there): each summary request fails.
    cfg.profiles["sum"] = ModelProfile(model="openai/gpt-4o-mini", api_base="http://127.0.0.1:9/v1", max_retries=0)
    running = await make_server(cfg)
    await setup(running.client)
    compactor = running.app.runs.compactor
    for i in range(11):  # 22 entries: a compaction starts, and fails
        assert await run(running.client, talk(i)) == "finished"
    await eventually(lambda: compactor.requests == 1 and not compactor._tasks, what="the first attempt over")
    assert await run(running.client, talk(11)) == "finished"  # 24 < 22 + (20 - 4) / 4: no retry
    assert compactor.requests == 1 and not compactor._tasks
    assert await run(running.client, talk(12)) == "finished"  # 26: again
    await eventually(lambda: compactor.requests == 2 and not compactor._tasks, what="the second attempt over")
    assert compactor.done == 0 and len(running.app.store.get("g").transcripts[NPC]) == 26


async def test_a_summary_cut_at_the_output_limit_is_refused_and_tried_again_later(
    make_server, tmp_path, caplog
) -> None:  # type: ignore[no-untyped-def]
    cfg = config(tmp_path, compact_after_entries=8, keep_entries=4, max_entries=50)
    cfg.transcripts.summary_max_chars = 200  # 64 output tokens; the scripted model writes one a word
    cfg.profiles["sum"].script.replies = [" ".join(["npc_1 sold a lamp."] * 40)]
    running = await make_server(cfg)
    await setup(running.client)
    for i in range(5):
        assert await run(running.client, talk(i)) == "finished"
    compactor = running.app.runs.compactor
    await eventually(lambda: compactor.requests == 1 and not compactor._tasks, what="the summary over")
    session = running.app.store.get("g")
    assert compactor.done == 0 and len(session.transcripts[NPC]) == 10 and NPC not in session.summaries
    assert "cut at the output limit" in caplog.text
    (stats,) = (await running.client.get_info(include_stats=True)).stats
    assert (stats.summaries, stats.summary_completion_tokens) == (1, 64)  # refused, and still paid for
    # 12 entries: grown a quarter of the way from keep_entries to compact_after_entries, so tried again.
    assert await run(running.client, talk(5)) == "finished"
    await eventually(lambda: compactor.requests == 2 and not compactor._tasks, what="the second try over")


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"compact_after_entries": 100, "keep_entries": 100}, "keep_entries < compact_after_entries"),
        ({"compact_after_entries": 3000}, "<= max_entries"),
        ({"summary_max_chars": 50}, "summary_max_chars"),
        ({"max_entries": 1, "compact_after_entries": 0}, "max_entries >= 2"),
    ],
)
def test_inconsistent_transcript_settings_are_refused(fields: dict, needle: str) -> None:
    with pytest.raises(InvalidRequest) as err:
        TranscriptConfig(**fields)
    assert needle in err.value.message


def test_an_undefined_summary_profile_is_refused() -> None:
    with pytest.raises(InvalidRequest) as err:
        Config(transcripts=TranscriptConfig(summary_profile="nope"))
    assert "summary_profile 'nope'" in err.value.message


async def test_events_leaving_past_the_cap_are_folded_into_the_summary(make_server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Issue 31, item 3: world events past the cap were dropped and never summarised. With
    max_events=4, every event past the cap is folded into the actor's summary before it
    leaves (the transcript itself is nowhere near due), journaled, and said so in left_out."""
    running = await make_server(config(tmp_path, compact_after_entries=100, keep_entries=4, max_entries=200))
    revision = await setup(running.client)
    compactor = running.app.runs.compactor
    for i in range(8):
        revision = await World().event(f"Cart {i} rolls by the door.", at=INN).send(running.client, "g", revision)
        assert await run(running.client, talk(i)) == "finished"
        await eventually(lambda: not compactor._tasks, what="the compaction over")
    session = running.app.store.get("g")
    summary = session.summaries[NPC]
    assert session.world.events_dropped == 4 and summary.text == SUMMARY
    # Each event got folded while it was about to leave: all that left are held, and none twice.
    assert summary.events_summarised == summary.events_through - 1 >= 4 and summary.summarised == 0
    assert len(session.transcripts[NPC]) == 16
    shown = await preview(running.client)
    left = {lo.reason: lo.count for lo in shown.left_out if lo.section == "history" and lo.kind == "world_event"}
    held = "past the session's events cap (state.max_events): the transcript summary holds them"
    assert left[held] == summary.events_summarised and SUMMARY in shown.messages[0].content
    await running.server.stop("restart")
    second = await make_server(config(tmp_path, compact_after_entries=100, keep_entries=4, max_entries=200))
    assert second.app.store.get("g").summaries[NPC] == summary  # journaled with the compaction
