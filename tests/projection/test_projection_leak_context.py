"""Property, through the real context engine: random worlds, inputs of every
kind, a recording fake model that answers with aliases (and a wrong answer
first, so decision retries are exercised too). Nothing any request holds is an
engine ID, an action ID, a suppressed moment part or a hidden value, the leak
guard agrees, and every ID handed back to the game is a real, visible one."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from leakworld import Case, all_engine_ids, cases, hidden_actor

from sidecar.config import Config
from sidecar.context import ContextEngine
from sidecar.context.contract import (
    Accepted,
    ActionOption,
    DecisionInput,
    DescribeInput,
    DialogueInput,
    NarrateInput,
    Rejected,
    RunSpec,
)
from sidecar.context.retry import retry_messages
from sidecar.errors import ContextWindowExceeded, InvalidRequest
from sidecar.llm.guard import check_outgoing
from sidecar.projection import Projection
from sidecar.state.model import Session

ENGINE = ContextEngine(Config())


def count(text: str) -> int:
    # A cheap stand-in tokenizer: budgets are not what this test is about.
    return len(text) // 3 + 1


def _spec(case: Case, rnd: random.Random, kind: str) -> RunSpec:
    ids = sorted(case.session.world.entities)
    words = f"{rnd.choice(ids)} waves at {rnd.choice(ids)}/{rnd.choice(ids)}"
    if kind == "narrate":
        inp = NarrateInput(text=words, entity_ids=tuple(rnd.sample(ids, rnd.randint(0, min(2, len(ids))))))
    elif kind == "dialogue":
        inp = DialogueInput(text=f"Hello, {rnd.choice(ids)}!", speaker_id=rnd.choice(["", *ids]))
    elif kind == "decision":
        options = tuple(
            ActionOption(
                action_id=f"ACT-{rnd.getrandbits(64):016x}",
                label=f"attack {rnd.choice(ids)}",
                target_id=rnd.choice(["", *ids]),
            )
            for _ in range(rnd.randint(1, 4))
        )
        inp = DecisionInput(situation=words, options=options, max_attempts=3)
    else:
        inp = DescribeInput(entity_id=rnd.choice(ids), aspect=f"look of {rnd.choice(ids)}")
    focus = tuple(rnd.sample(ids, rnd.randint(0, min(2, len(ids)))))
    return RunSpec(
        session_id=case.session.id,
        actor_id=case.actor_id,
        input=inp,
        focus_ids=focus,
        moment=case.moment,
        run_id=f"run-{rnd.getrandbits(32)}",
    )


def _assert_clean(messages: list[dict[str, str]], ids: set[str]) -> None:
    """Name the offending line, so a failure says which part of the prompt leaked."""
    for m in messages:
        for line in m["content"].splitlines():
            assert not any(i in line for i in ids), f"engine ID in a {m['role']} line: {line!r}"


def _named(spec: RunSpec, session: Session | None = None) -> list[str]:
    """What the run's input names (these become perceivable; docs/privacy.md). Given the
    session, the narrator's too: the public things players carry, and the public place
    of the world event it narrates (the newest with the narration's text; docs/context.md)."""
    inp = spec.input
    named = list(spec.focus_ids)
    if session is not None and not spec.actor_id:
        ents = session.world.entities
        players = {e.id for e in ents.values() if e.kind == "player"}
        named.extend(e.id for e in ents.values() if e.location_id in players and e.visibility.level == "public")
        if isinstance(inp, NarrateInput):
            told = [ev for ev in session.world.events if ev.text == inp.text]
            place = ents.get(told[-1].location_id) if told else None
            if place is not None and place.visibility.level == "public":
                named.append(place.id)
    if isinstance(inp, NarrateInput):
        named.extend(inp.entity_ids)
    elif isinstance(inp, DialogueInput) and inp.speaker_id:
        named.append(inp.speaker_id)
    elif isinstance(inp, DecisionInput):
        named.extend(o.target_id for o in inp.options if o.target_id)
    elif isinstance(inp, DescribeInput):
        named.append(inp.entity_id)
    return named


def _reply(rnd: random.Random, aliases: list[str], spec: RunSpec, valid: bool) -> str:
    said = " and ".join(rnd.sample(aliases, min(len(aliases), 2))) or "nobody"
    if not isinstance(spec.input, DecisionInput):
        return f"I see {said}."
    n = len(spec.input.options)
    action = rnd.randint(1, n) if valid else n + 5
    return "Thinking. " + json.dumps({"action": action, "message": f"Go, {said}!", "notes": f"met {said}"})


@pytest.mark.parametrize("kind", ["narrate", "dialogue", "decision", "describe"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(), seed=st.integers(0, 2**32), budget=st.sampled_from([600, 100_000]))
def test_context_engine_requests_never_leak(case: Case, kind: str, seed: int, budget: int):
    rnd = random.Random(seed)
    s = case.session
    sent: list[list[dict[str, str]]] = []  # the recording fake model: every request it would get
    returned: list[str] = []  # every engine ID handed back to the game
    action_ids: set[str] = set()
    if hidden_actor(case):
        with pytest.raises(InvalidRequest):
            ENGINE.prepare(s, _spec(case, rnd, kind), count_tokens=count, budget_tokens=budget)
        return
    for _turn in range(2):
        spec = _spec(case, rnd, kind)
        if isinstance(spec.input, DecisionInput):
            action_ids.update(o.action_id for o in spec.input.options)
        try:
            prepared = ENGINE.prepare(s, spec, count_tokens=count, budget_tokens=budget)
        except ContextWindowExceeded:
            continue  # a small budget may not hold the fixed part; nothing was sent
        proj = Projection(s, spec.actor_id, named_ids=_named(spec, s))
        guard_moment = proj.guard_moment(spec.moment)
        messages = prepared.prompt.messages
        aliases = sorted(s.aliases.by_alias)
        for attempt in range(1, 4):
            _assert_clean(messages, all_engine_ids(s))
            check_outgoing(messages, prepared.engine_ids, moment=guard_moment)
            sent.append([dict(m) for m in messages])
            reply = _reply(rnd, aliases, spec, valid=attempt > 1)
            verdict = prepared.evaluate(reply, attempt)
            if isinstance(verdict, Rejected):
                try:
                    messages = retry_messages(ENGINE, prepared, verdict)
                except ContextWindowExceeded:
                    break  # the retry prompt did not fit a small budget; nothing was sent
                continue
            assert isinstance(verdict, Accepted)
            if verdict.action is not None:
                assert isinstance(spec.input, DecisionInput)
                assert verdict.action.action_id in {o.action_id for o in spec.input.options}
                # Every ID handed back to the game is a real engine ID this actor may perceive.
                view = Projection(s, spec.actor_id, named_ids=_named(spec, s))
                for eid in verdict.action.mentioned_ids:
                    assert view.can_see(s.world.entities[eid])
                returned.extend(verdict.action.mentioned_ids)
            prepared.record(reply, interrupted=False, run_id=spec.run_id)
            break
    secrets = all_engine_ids(s) | action_ids
    exposed = s.options.expose_moment
    for messages in sent:
        for m in messages:
            text = m["content"]
            for secret in secrets:
                assert secret not in text, f"an engine or action ID reached the model in a {m['role']} message"
            assert exposed.tick or str(case.moment.tick) not in text
            assert exposed.timeline or case.moment.timeline not in text
            assert exposed.calendar or case.moment.calendar not in text
            for value in case.hidden_values:
                assert value not in text, "a hidden value reached the model"
    assert set(returned) <= set(s.world.entities)
    event(f"{kind}: {'retried' if len(sent) > 2 else 'sent' if sent else 'nothing sent'}")


# Found by the property above once (fixed in the context engine): player lines and
# persona template text reached prompts without Projection.text. Kept as a focused check.
@pytest.mark.parametrize("what", ["player_text", "persona_template"])
def test_player_text_and_persona_templates_are_projected(what: str):
    from world import apply, leak_tavern

    from sidecar.state import ops as o
    from sidecar.state.model import PersonaBinding, PersonaTemplate

    s = leak_tavern()
    goblin, chest = "BP_Goblin_C_2147483647", "BP_Chest_C_0000000777"
    text = "Hello there"
    if what == "player_text":
        text = f"Give me {chest}!"
    else:
        template = PersonaTemplate(identity=f"You are {{npcName}}, keeper of {chest}.")
        apply(s, o.SetPersona(PersonaBinding(actor_id=goblin, inline=template)))
    spec = RunSpec(session_id=s.id, actor_id=goblin, input=DialogueInput(text=text))
    prepared = ENGINE.prepare(s, spec, count_tokens=count, budget_tokens=100_000, preview=True)
    check_outgoing(prepared.prompt.messages, prepared.engine_ids)
