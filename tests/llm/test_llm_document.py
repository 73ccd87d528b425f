"""The base model's document (sidecar/llm/document.py) from prompts the real context
engine builds, and the grammars' shapes (sidecar/llm/grammars.py). No weights: what
the model does with them is tests/llm/test_llm_local_voice.py."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "context"))

from ctxhelpers import engine, prepare  # noqa: E402
from world import World  # noqa: E402

from sidecar.context.contract import (  # noqa: E402
    ActionOption,
    DecisionInput,
    DescribeInput,
    DialogueInput,
    NarrateInput,
    RunSpec,
)
from sidecar.llm.document import EXAMPLES, render_document  # noqa: E402
from sidecar.llm.grammars import grammar_for, stop_for  # noqa: E402
from sidecar.llm.types import ReplyShape  # noqa: E402
from sidecar.runs.attempts import reply_shape  # noqa: E402


def _world() -> World:
    return (
        World()
        .entity("/Game/Maps/Inn.Inn", "location", "Sleepy Boar", description="A warm inn.")
        .entity("pc_1", "player", "Søren", at="/Game/Maps/Inn.Inn", description="A tired pilgrim.")
        .entity("NPC_Bram_7f3a", "character", "Bram", at="/Game/Maps/Inn.Inn", description="The innkeeper.")
        .entity("BP_Cellar_C_1", "location", "Cellar", description="A dark cellar.")
        .entity("NPC_Ghost_9", "character", "Ghost", at="BP_Cellar_C_1", description="A pale ghost.")
        .scene("weather", "snow")
    )


def _document(spec_input, actor: str = "", world: World | None = None) -> str:
    session = (world or _world()).session()
    spec = RunSpec(session_id="s1", actor_id=actor, input=spec_input, run_id="r1")
    prepared = prepare(engine(), session, spec)
    return render_document(prepared.prompt.messages, reply_shape(spec_input)).text


def test_a_narration_is_the_examples_then_the_scene_then_the_event() -> None:
    doc = _document(NarrateInput("Søren drops his lantern.", ("pc_1",)))
    assert doc.startswith(EXAMPLES["prose"] + "\n")  # the same bytes before every narration
    turn = doc[len(EXAMPLES["prose"]) :]
    assert "Location: Sleepy Boar — A warm inn." in turn and "Søren — A tired pilgrim." in turn
    assert "Conditions: weather: snow" in turn
    assert turn.endswith("Event: Søren drops his lantern.\nNarration:")
    # The rules, headers and instructions are for instruction-following models.
    assert "##" not in doc and "INVIOLABLE" not in doc and "JSON" not in doc
    # Nobody the narrator cannot perceive, and no engine ID.
    assert "Ghost" not in turn and "pc_1" not in doc and "NPC_Bram_7f3a" not in doc


def test_earlier_narrations_stay_out_and_a_characters_own_lines_stay_in() -> None:
    world = _world()
    narrated = world.session()
    history = [
        {"role": "user", "content": "Event: The door bangs open."},
        {"role": "assistant", "content": "Snow swirls in as the door slams against the wall."},
    ]
    spec = RunSpec(session_id="s1", actor_id="", input=NarrateInput("Bram shouts."), run_id="r1")
    messages = prepare(engine(), narrated, spec).prompt.messages
    messages = [messages[0], *history, *messages[1:]]
    doc = render_document(messages, ReplyShape("prose")).text
    assert "Event: The door bangs open." in doc and "Snow swirls" not in doc
    line = [*messages[:1], {"role": "user", "content": 'Søren says: "Hello?"'},
            {"role": "assistant", "content": "Welcome,  stranger."}, *messages[1:]]  # fmt: skip
    spoken = render_document(line, ReplyShape("line")).text
    assert "Søren says: \"Hello?\"" in spoken


def test_a_dialogue_reply_starts_inside_the_actors_quote() -> None:
    doc = _document(DialogueInput("Any rooms free?", "pc_1"), actor="NPC_Bram_7f3a")
    assert doc.startswith(EXAMPLES["line"])
    assert doc.endswith('Søren says: "Any rooms free?"\nBram says: "')
    assert "You are Bram" in doc


def test_a_decision_lists_its_options_and_starts_the_json() -> None:
    options = (ActionOption("a1", "Pour a drink"), ActionOption("a2", "Call the guard", "pc_1"))
    doc = _document(DecisionInput("Søren looks thirsty.", options), actor="NPC_Bram_7f3a")
    assert "Situation: Søren looks thirsty." in doc
    assert "Options: 1. Pour a drink 2. Call the guard (target: Søren)" in doc
    assert doc.endswith("Bram decides:")
    grammar = grammar_for(reply_shape(DecisionInput("x", options)))
    assert 'choice ::= "1" | "2"\n' in grammar and stop_for(ReplyShape("decision")) == []


def test_a_description_asks_where_an_event_would_stand() -> None:
    doc = _document(DescribeInput("/Game/Maps/Inn.Inn"))
    assert doc.endswith("Event: Describe Sleepy Boar as the narrator perceives it.\nNarration:")


def test_the_grammars_forbid_what_must_not_reach_the_screen() -> None:
    for shape in (ReplyShape("prose"), ReplyShape("line"), ReplyShape("decision", 3)):
        grammar = grammar_for(shape)
        assert r"\n\r#*<>\[\]{}|\\`_:" in grammar  # line breaks, markup, handles, labels
    assert stop_for(ReplyShape("prose")) == ["\n"] and stop_for(ReplyShape("line")) == ['"']
