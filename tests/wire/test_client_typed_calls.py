"""The Python client's typed calls for every operation the C# and C++ clients have
(issue 33 item 5; docs/protocol.md §3, "One client surface"): GetState, ExportSession,
StreamDeltas, CancelRun, PreviewPrompt and ReadTranscript, each against a real server
on a real socket, each answering as the raw stub does and failing with the same reason."""

from __future__ import annotations

import grpc
import pytest
from world import World

from sidecar.client import SidecarClient, error_reason
from sidecar.config import Config, ModelProfile, ScriptConfig
from sidecar.v1 import agent_service_pb2 as apb
from sidecar.v1 import session_service_pb2 as spb
from sidecar.v1 import state_pb2 as stpb
from sidecar.v1 import types_pb2 as tpb

INN, NPC, PLAYER = "loc-inn-01", "npc-maerwyn-7", "player-one-1"


@pytest.fixture
async def client(make_server) -> SidecarClient:  # type: ignore[no-untyped-def]
    profile = ModelProfile(model="scripted/typed", max_retries=0, script=ScriptConfig(chunk_delay_ms=0))
    return (await make_server(Config(profiles={"fake": profile}, default_profile="fake"))).client


async def _world(client: SidecarClient, session: str = "g") -> int:
    opened = await client.open_session(session)
    world = (
        World()
        .entity(INN, "location", "The Rusty Anchor", description="A smoky harbour tavern.")
        .entity(NPC, "character", "Maerwyn", at=INN, description="A nomad merchant.")
        .entity(PLAYER, "player", "Aria", at=INN, description="A young sellsword.")
    )
    return await world.send(client, session, opened.revision)


async def test_get_state_reads_the_world_or_the_entities_asked_for(client: SidecarClient) -> None:
    revision = await _world(client)
    whole = await client.get_state("g")
    assert whole == await client.sessions.GetState(spb.GetStateRequest(session_id="g"))
    assert whole.revision == revision
    assert sorted(e.id for e in whole.snapshot.entities) == sorted([INN, NPC, PLAYER])
    only = await client.get_state("g", entity_ids=[NPC])
    assert [e.id for e in only.snapshot.entities] == [NPC]
    places = await client.get_state("g", kinds=[tpb.ENTITY_KIND_LOCATION])
    assert [e.id for e in places.snapshot.entities] == [INN]
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await client.get_state("nope")
    assert error_reason(caught.value) == "SESSION_NOT_FOUND"


async def test_export_session_gives_a_save_that_imports_as_the_same_world(client: SidecarClient) -> None:
    revision = await _world(client)
    save = await client.export_session("g")
    assert (save.revision, save.format_version > 0, len(save.blob) > 0) == (revision, True, True)
    loaded = await client.import_session("copy", save.blob)
    assert loaded.revision == revision
    assert (await client.get_state("copy")).snapshot == (await client.get_state("g")).snapshot
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await client.export_session("nope")
    assert error_reason(caught.value) == "SESSION_NOT_FOUND"


async def test_stream_deltas_answers_each_batch_in_order_and_goes_on_after_a_bad_one(client: SidecarClient) -> None:
    await client.open_session("g")
    upsert = World().entity(NPC, "character", "Maerwyn").to_pb()
    ghost = [stpb.DeltaOp(patch_entity=stpb.PatchEntityOp(id="ghost", name="Nobody"))]

    async def batches():  # type: ignore[no-untyped-def]
        yield spb.StreamDeltasRequest(session_id="g", base_revision=0, delta_id="a", ops=upsert)
        yield spb.StreamDeltasRequest(session_id="g", base_revision=1, delta_id="b", ops=ghost)
        yield spb.StreamDeltasRequest(session_id="g", base_revision=1, delta_id="c", ops=[])

    answers = [answer async for answer in client.stream_deltas(batches())]
    assert [(a.delta_id, a.revision, a.error.reason) for a in answers] == [
        ("a", 1, ""), ("b", 1, "UNKNOWN_ENTITY"), ("c", 2, "")
    ]
    # A plain iterable of batches works too, as with grpc.aio's own stubs.
    again = [answer async for answer in client.stream_deltas([spb.StreamDeltasRequest(
        session_id="g", base_revision=2, delta_id="d", ops=[])])]
    assert [(a.delta_id, a.revision) for a in again] == [("d", 3)]


async def test_cancel_run_stops_a_run_by_its_id(client: SidecarClient) -> None:
    await _world(client)
    request = apb.RunRequest(session_id="g", run_id="r-typed", narrate=apb.NarrateInput(text="talk #stall-mid"))
    call = client.agent.Run(request)
    async for response in call:
        if response.event.HasField("text"):
            break
    assert await client.cancel_run("r-typed") == apb.CancelRunResponse()
    with pytest.raises(grpc.aio.AioRpcError) as ended:
        async for _ in call:
            pass
    assert error_reason(ended.value) == "RUN_CANCELLED"
    with pytest.raises(grpc.aio.AioRpcError) as unknown:
        await client.cancel_run("r-typed")
    assert error_reason(unknown.value) == "RUN_NOT_FOUND"


async def test_preview_prompt_is_the_prompt_a_run_would_send(client: SidecarClient) -> None:
    await _world(client)
    request = apb.RunRequest(session_id="g", actor_id=NPC,
                             dialogue=apb.DialogueInput(speaker_id=PLAYER, text="Any news?"))
    preview = await client.preview_prompt(request)
    assert preview == await client.agent.PreviewPrompt(apb.PreviewPromptRequest(run=request))
    assert preview.messages and preview.prompt_tokens > 0
    assert "Any news?" in "\n".join(m.content for m in preview.messages)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await client.preview_prompt(apb.RunRequest(session_id="nope", narrate=apb.NarrateInput(text="x")))
    assert error_reason(caught.value) == "SESSION_NOT_FOUND"


async def test_read_transcript_pages_through_what_was_said(client: SidecarClient) -> None:
    await _world(client)
    for turn in range(3):
        said = "".join([piece async for piece in client.narrate("g", f"Rain falls, {turn}.")])
        assert said
    whole = await client.read_transcript("g")
    assert whole == await client.agent.ReadTranscript(apb.ReadTranscriptRequest(session_id="g"))
    assert len(whole.entries) == 6  # each input and its narration
    first = await client.read_transcript("g", page_size=4)
    rest = await client.read_transcript("g", page_size=4, cursor=first.next_cursor)
    assert first.next_cursor and not rest.next_cursor
    assert [e.text for e in [*first.entries, *rest.entries]] == [e.text for e in whole.entries]
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await client.read_transcript("g", cursor="not-a-cursor")
    assert error_reason(caught.value) == "INVALID_CURSOR"
