"""Privacy of the prompt a run builds, for the cases an outside audit found
(issue 13): coordinates named as scene facts, a decision reply that names a
raw engine ID, game IDs shaped like aliases, and an unfillable persona slot.
docs/privacy.md is the contract."""

from __future__ import annotations

from ctxhelpers import all_text, engine, prepare
from world import World, anchor_tavern

from sidecar.context.contract import ActionOption, DecisionInput, DialogueInput, NarrateInput, Rejected, RunSpec
from sidecar.context.retry import retry_messages
from sidecar.llm.guard import check_outgoing
from sidecar.prompts.system import SYSTEM_RULES
from sidecar.state.model import Entity, Field, Vec3, Visibility
from sidecar.state.ops import PatchEntity

NPC = "npc-maerwyn-7"


def test_a_coordinate_name_is_dropped_from_fields_and_scene_facts_alike() -> None:
    s = anchor_tavern()
    s.options.coordinate_fields = ["camera_origin", "patrol"]
    fields = {"camera_origin": Field(Vec3(404.5, 505.5, 606.5)), "patrol": Field([Vec3(1.125, 2.125, 3.125)])}
    (
        World()
        .scene("camera_origin", Vec3(101.5, 202.5, 303.5))
        .scene("patrol", [Vec3(7.25, 8.25, 9.25), Vec3(10.75, 11.75, 12.75)])
        .add(PatchEntity(NPC, set_fields=fields))
        .onto(s)
    )
    text = all_text(prepare(engine(), s, RunSpec("s1", NPC, DialogueInput("Where are we?"))).prompt.messages)
    assert "weather: rain" in text  # other scene facts stay
    for hidden in ("camera_origin", "patrol", "101.5", "404.5", "7.25", "10.75", "1.125"):
        assert hidden not in text, hidden
    # Exposed, the same name shows in both places.
    s.options.exposed_coordinate_fields = ["camera_origin"]
    s.revision += 1
    text = all_text(prepare(engine(), s, RunSpec("s1", NPC, DialogueInput("Where are we?"))).prompt.messages)
    assert "camera_origin: (101.5, 202.5, 303.5)" in text and "camera_origin: (404.5, 505.5, 606.5)" in text
    assert "patrol" not in text


LONG_ID = "BP_Merchant_C_2147483647_PersistentLevel_0001"


def _decision(session) -> RunSpec:
    options = (ActionOption("act.trade", "Trade"), ActionOption("act.leave", "Leave"))
    return RunSpec("s1", NPC, DecisionInput("A customer waits.", options), focus_ids=(LONG_ID,))


def test_a_reply_naming_a_raw_engine_id_is_projected_before_the_retry() -> None:
    s = anchor_tavern()
    World().entity(LONG_ID, "character", "Merchant", at="loc-tavern-01").onto(s)
    eng = engine()
    p = prepare(eng, s, _decision(s))
    for action in (LONG_ID, f"talk to {LONG_ID}", "npc-maerwyn-7"):
        reply = f'I pick him. {{"action": "{action}", "message": "Now, {LONG_ID}!"}}'
        verdict = p.evaluate(reply, 1)
        assert isinstance(verdict, Rejected)
        retry = retry_messages(eng, p, verdict)
        # Neither the reason nor the replayed reply quotes an ID, not even a cut one...
        for text in (verdict.reason, all_text(retry)):
            assert LONG_ID[:14] not in text and "npc-maerwyn-7" not in text
        # ...so the retry is a request the guard lets through.
        check_outgoing(retry, p.engine_ids)
        assert "must be an option number" in verdict.reason


def test_engine_ids_shaped_like_aliases_do_not_block_every_prompt() -> None:
    s = anchor_tavern()
    s.world.entities["npc_1"] = Entity(id="npc_1", kind="character", name="Odo", location_id="loc-tavern-01")
    s.world.entities["loc_2"] = Entity(id="loc_2", kind="location", name="Cellar")
    for spec in (
        RunSpec("s1", NPC, DialogueInput("Hello there.")),
        RunSpec("s1", "", NarrateInput("Odo sneezes.", ("npc_1",))),
    ):
        p = prepare(engine(), s, spec)
        check_outgoing(p.prompt.messages, p.engine_ids)  # before: PRIVACY_LEAK_BLOCKED, every run
        rules = p.prompt.messages[0]["content"]
        assert "such as npc_2 or loc_3" in rules
    # A session without such IDs keeps the one shared text (the cached prefix).
    plain = prepare(engine(), anchor_tavern(), RunSpec("s1", NPC, DialogueInput("Hello there.")))
    assert plain.prompt.messages[0]["content"].startswith(SYSTEM_RULES)


def test_an_unfillable_slot_renders_as_the_generic_word() -> None:
    s = anchor_tavern()
    s.world.entities["loc-vault-9"] = Entity(
        id="loc-vault-9", kind="location", name="Hidden Vault", visibility=Visibility("hidden")
    )
    s.world.entities[NPC].location_id = "loc-vault-9"  # identity: "You are {npcName}, a {role} in {location}."
    s.world.personas[NPC].inline.reminder = "Remember {undefinedSlot} and {location}."  # type: ignore[union-attr]
    text = all_text(prepare(engine(), s, RunSpec("s1", NPC, DialogueInput("Where are we?"))).prompt.messages)
    assert "{" not in text.replace('{"action"', "")  # no raw placeholder anywhere
    assert "You are Maerwyn, a merchant in somewhere." in text
    assert "Remember something and somewhere." in text
    assert "Hidden Vault" not in text
