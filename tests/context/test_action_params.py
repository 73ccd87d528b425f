"""Actions with parameters (docs/runs.md): the schema subset read where the request
arrives, what the prompt lists, and the check of a reply's parameters on every model:
values in range, enums as the game wrote them, entities mapped back to engine IDs,
and an entity the actor cannot perceive refused with a reason the retry carries."""

from __future__ import annotations

import json

import pytest
from ctxhelpers import engine, prepare
from world import World

from sidecar.context.action_params import parse_schema
from sidecar.context.contract import Accepted, ActionOption, DecisionInput, Rejected, RunSpec
from sidecar.context.retry import retry_messages
from sidecar.errors import InvalidRequest

NPC = "NPC_Bram_7f3a"
SCHEMA = {
    "type": "object",
    "properties": {
        "amount": {"type": "integer", "minimum": 1, "maximum": 50, "description": "coins"},
        "to": {"type": "string", "entity": "character"},
        "mood": {"enum": ["kind", "gruff"]},
        "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
    },
    "required": ["amount", "to"],
}


def world():
    return (
        World()
        .entity("/Game/Tavern", "location", "The Rusty Anchor", description="A smoky tavern.")
        .entity("/Game/Docks", "location", "The Docks", description="Wet planks.")
        .entity(NPC, "character", "Bram", at="/Game/Tavern", description="The innkeeper.")
        .entity("pc_1", "player", "Mira", at="/Game/Tavern", description="A ranger.")
        .entity("NPC_Nib_02", "character", "Nib", at="/Game/Tavern", description="A goblin.")
        .entity("NPC_Far_09", "character", "Smuggler", at="/Game/Docks", description="Far away.")
        .session("s1")
    )


def decide(schema: dict | None = None):
    session, eng = world(), engine()
    options = (
        ActionOption("pour", "Pour a pint"),
        ActionOption("pay", "Pay someone", parameters=parse_schema(json.dumps(schema or SCHEMA), "options[1]")),
    )
    spec = RunSpec("s1", NPC, DecisionInput("Nib asks for his wages.", options))
    return session, eng, prepare(eng, session, spec)


def reply(params: dict) -> str:
    return json.dumps({"action": 2, "parameters": params, "message": "Here.", "notes": "Paid."})


def test_the_prompt_lists_each_parameter_with_its_choices_and_never_an_engine_id() -> None:
    _, _, p = decide()
    last = p.prompt.messages[-1]["content"]
    line = next(ln for ln in last.splitlines() if ln.startswith("2. Pay someone"))
    assert "— with parameters: amount (coins): a whole number from 1 to 50" in line
    assert 'mood, optional: one of "kind", "gruff"' in line and "code, optional: text matching ^[A-Z]{3}$" in line
    to = line.split("to: one of ")[1].split(";")[0]
    assert "NPC_" not in to and "Smuggler" not in to and len(to.split(", ")) == 1  # Nib: Bram is the actor
    assert '"parameters": {...}' in last


def test_a_valid_reply_gives_the_game_its_values_and_engine_ids() -> None:
    _, _, p = decide()
    nib = p.model_text("NPC_Nib_02")  # Nib as the model reads it
    verdict = p.evaluate(reply({"amount": "12", "to": nib, "mood": "gruff", "code": "ABC"}), 1)
    assert isinstance(verdict, Accepted) and verdict.action is not None
    assert dict(verdict.action.parameters) == {"amount": "12", "to": "NPC_Nib_02", "mood": "gruff", "code": "ABC"}


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        ({"to": "Nib"}, 'this option needs "parameters": {"amount": ...}'),
        ({"amount": 51, "to": "Nib"}, 'parameter "amount" must be a whole number from 1 to 50; got 51'),
        ({"amount": True, "to": "Nib"}, 'parameter "amount" must be a whole number from 1 to 50; got true'),
        ({"amount": 5, "to": "Nib", "mood": "sad"}, 'parameter "mood" must be one of "kind", "gruff"; got "sad"'),
        ({"amount": 5, "to": "Nib", "code": "abc"}, 'parameter "code" must match ^[A-Z]{3}$; got "abc"'),
        ({"amount": 5, "to": "Mira"}, 'parameter "to" must name a character; "Mira" is a player'),
    ],
)
def test_a_reply_off_its_schema_is_rejected_with_a_reason_the_model_can_act_on(params, reason) -> None:
    _, _, p = decide()
    params = {k: (p.model_text("NPC_Nib_02") if v == "Nib" else p.model_text("pc_1") if v == "Mira" else v)
              for k, v in params.items()}  # fmt: skip
    verdict = p.evaluate(reply(params), 1)
    assert isinstance(verdict, Rejected), verdict
    assert reason.replace("Mira", p.model_text("pc_1")) in verdict.reason


def test_an_entity_the_actor_cannot_perceive_is_refused_and_the_retry_says_why() -> None:
    session, eng, p = decide()
    far = session.aliases.by_id["NPC_Far_09"]  # issued, but Bram cannot see the docks
    verdict = p.evaluate(reply({"amount": 3, "to": far}), 1)
    assert isinstance(verdict, Rejected)
    assert verdict.reason.startswith('parameter "to": ') and "name one you perceive" in verdict.reason
    assert "NPC_Far_09" not in verdict.reason
    retry = retry_messages(eng, p, verdict)
    assert verdict.reason in retry[-1]["content"] and "NPC_Far_09" not in json.dumps(retry)
    assert session.notes == {}  # a rejected reply changes nothing


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ("{", "is not JSON"),
        ('{"type": "array"}', "must be a JSON object schema"),
        ('{"properties": {}}', '"properties" must name at least one parameter'),
        ('{"properties": {"n": {"type": "integer", "minimum": 5}}}', 'needs "minimum" and "maximum"'),
        ('{"properties": {"n": {"type": "integer", "minimum": 5, "maximum": 1}}}', 'must not be above "maximum"'),
        ('{"properties": {"n": {"enum": []}}}', '"enum" must be a list of at least one value'),
        ('{"properties": {"n": {"enum": [1.5]}}}', '"enum" values must be strings or integers'),
        ('{"properties": {"n": {"type": "string", "pattern": "[a-z]+"}}}', "anchored with ^ and $"),
        ('{"properties": {"n": {"type": "string", "pattern": "^([a-z]$"}}}', "is not a regular expression"),
        ('{"properties": {"n": {"type": "string", "entity": "dragon"}}}', '"entity" must be "any" or one of'),
        ('{"properties": {"n": {"type": "boolean"}}}', 'must have "enum", or "type" "integer" or "string"'),
        ('{"properties": {"n": {"type": "string", "format": "email"}}}', "keys this subset does not take: format"),
        ('{"properties": {"n": {"enum": ["a"]}}, "required": ["m"]}', '"required" must list names'),
        ('{"properties": {"two words": {"enum": ["a"]}}}', "must be a letter then letters"),
    ],
)
def test_a_schema_outside_the_subset_is_refused_saying_what_is_wrong(schema: str, message: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        parse_schema(schema, "decision.options[0].parameters_schema")
    assert refused.value.message.startswith("decision.options[0].parameters_schema")
    assert message in refused.value.message and "docs/runs.md" in refused.value.message
