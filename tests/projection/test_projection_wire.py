"""Privacy through a real server on a Unix socket: the game's deltas and runs go
over gRPC, the real context engine builds the prompts, the real model path
calls the scripted fake model, and a recorder on that model keeps every request
it receives. No request holds an engine ID, an action ID, the tick or the
timeline; the IDs the game gets back are its own, and only ones its actor sees."""

from __future__ import annotations

import re
from typing import Any

import pytest
from world import HIDDEN, World

from sidecar.config import Config, ModelProfile
from sidecar.state.model import EntityRef, Field, Moment, Vec3
from sidecar.v1 import agent_service_pb2 as pb
from sidecar.v1 import types_pb2

pytestmark = pytest.mark.filterwarnings("ignore:Items .* are using the .ReadOnly. qualifier:UserWarning")

NPC = "BP_Goblin_C_2147483647"
PLAYER = "9b2d5c1e-hero-0000-0000-000000000001"
TAVERN = "/Game/Maps/Tavern.Tavern_0001"
FOREST = "/Game/Maps/Forest.Forest_0002"
WOLF = "BP_Wolf_C_0000000042"
SPY = "BP_Spy_C_0000000099"
CHEST = "ITEM_Chest_ÿ_0777"
ACTIONS = ("ACT-7f3a-attack-0001", "ACT-7f3a-talk-0002", "ACT-7f3a-open-0003")
MOMENT = types_pb2.GameMoment(timeline="timeline-4be4c4-main", tick=987654321, calendar="3rd of Frostmonth")
SECRET = "SECRET-gm-note-0001"

_ALIAS = re.compile(r"\b(?:npc|player|loc|item|thing|faction)_\d+\b")


def _world() -> World:
    moment = Moment(timeline=MOMENT.timeline, tick=MOMENT.tick, calendar=MOMENT.calendar)
    return (
        World()
        .entity(TAVERN, "location", "The Rusty Anchor")
        .entity(FOREST, "location", "Dark Forest")
        .entity(WOLF, "character", "Wolf", at=FOREST)
        .entity(CHEST, "item", "Chest", at=TAVERN)
        .entity(
            NPC,
            "character",
            "Grub",
            at=TAVERN,
            description=f"A goblin who owes {WOLF} money.",
            hp=12,
            position=Vec3(1, 2, 3),
            gm_note=Field(SECRET, HIDDEN),
            rival=EntityRef(WOLF),
        )
        .entity(PLAYER, "player", "Aria", at=TAVERN, description=f"Carries {CHEST}.")
        .entity(SPY, "character", "Spy", at=TAVERN, visibility=HIDDEN)
        .event(f"{PLAYER} slams {CHEST} shut", about=[PLAYER, CHEST], actor=PLAYER, at=TAVERN, moment=moment)
    )


@pytest.fixture
def recorded(monkeypatch) -> list[list[dict[str, Any]]]:
    """Every request the fake model receives; it answers with the aliases it saw."""
    from sidecar.llm.scripted import ScriptedLLM

    seen: list[list[dict[str, Any]]] = []
    original = ScriptedLLM.astreaming

    async def recording(self, model, messages, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append([dict(m) for m in messages])
        async for chunk in original(self, model, messages, *args, **kwargs):
            yield chunk

    def reply(self, name, script, cue, arg, last):  # type: ignore[no-untyped-def]
        prompt = "\n".join(str(m.get("content", "")) for m in seen[-1])
        said = " and ".join(sorted(set(_ALIAS.findall(prompt)))) or "nobody"
        return f'I look at {said}. {{"action": 2, "message": "Come, {said}!", "notes": "saw {said}"}}'

    monkeypatch.setattr(ScriptedLLM, "astreaming", recording)
    monkeypatch.setattr(ScriptedLLM, "_reply", reply)
    return seen


async def _run(client, request: pb.RunRequest) -> list[pb.RunEvent]:
    return [event async for event in client.run(request, timeout=30)]


async def test_runs_over_the_wire_leak_nothing(make_server, recorded) -> None:
    config = Config(
        profiles={"fake": ModelProfile(model="scripted/privacy", context_window=8192)}, default_profile="fake"
    )
    server = await make_server(config)
    client = server.client
    opened = await client.open_session("save-slot-7f3a", coordinate_fields=["position"])
    await _world().send(client, "save-slot-7f3a", opened.revision)
    session = server.app.store.get("save-slot-7f3a")
    spy_alias = session.aliases.by_id[SPY]

    options = [
        pb.ActionOption(action_id=ACTIONS[0], label=f"Attack {WOLF}", target_id=WOLF),
        pb.ActionOption(action_id=ACTIONS[1], label=f"Talk to {PLAYER}", target_id=PLAYER),
        pb.ActionOption(action_id=ACTIONS[2], label=f"Open {CHEST}", target_id=CHEST),
    ]
    requests = [
        pb.RunRequest(
            session_id="save-slot-7f3a",
            actor_id=NPC,
            moment=MOMENT,
            decision=pb.DecisionInput(situation=f"{PLAYER} glares; {SPY} lurks.", options=options),
        ),
        pb.RunRequest(
            session_id="save-slot-7f3a",
            actor_id="",
            moment=MOMENT,
            focus_ids=[PLAYER],
            narrate=pb.NarrateInput(text=f"{PLAYER} opens {CHEST}.", entity_ids=[PLAYER, CHEST]),
        ),
        pb.RunRequest(
            session_id="save-slot-7f3a",
            actor_id=NPC,
            moment=MOMENT,
            dialogue=pb.DialogueInput(text=f"Seen {WOLF} lately?", speaker_id=PLAYER),
        ),
        pb.RunRequest(
            session_id="save-slot-7f3a",
            actor_id=NPC,
            moment=MOMENT,
            describe=pb.DescribeInput(entity_id=PLAYER, aspect="mood"),
        ),
    ]
    events = [await _run(client, r) for r in requests]

    assert len(recorded) >= len(requests)
    secrets = [
        NPC,
        PLAYER,
        TAVERN,
        FOREST,
        WOLF,
        SPY,
        CHEST,
        *ACTIONS,
        SECRET,
        "save-slot-7f3a",
        MOMENT.timeline,
        str(MOMENT.tick),
        MOMENT.calendar,
    ]
    for messages in recorded:
        text = "\n".join(str(m.get("content", "")) for m in messages)
        for secret in secrets:
            assert secret not in text
        assert spy_alias not in text  # hidden: not even its alias
        assert "(1, 2, 3)" not in text  # the coordinate field

    chosen = [e.action for e in events[0] if e.WhichOneof("kind") == "action"]
    assert len(chosen) == 1
    assert chosen[0].action_id == ACTIONS[1] and chosen[0].index == 1
    # The model named every alias it saw; the game gets engine IDs back, each one
    # something the goblin perceives (the wolf only as the option's target).
    assert set(chosen[0].mentioned_ids) <= {NPC, PLAYER, TAVERN, CHEST, WOLF}
    assert PLAYER in chosen[0].mentioned_ids and SPY not in chosen[0].mentioned_ids
    for run_events in events:
        assert run_events[-1].WhichOneof("kind") == "finished"
