"""Property (issue 24 item 1): sessions whose engine IDs are realistic, not
distinctive: short prefixes with numbers (`pc_1`, `oc_2`, `layer_1`: inside the
aliases `npc_1`, `loc_2`, `player_1`), common words (`narrator`, `Identity`,
`somewhere`: the project's own words and the generic ones), and IDs inside one
another. Through the real context engine, every input kind, a decision retry and
a second turn that reads the model's aliases back from the transcript: every
request passes the leak guard (none is refused, so every run completes), and an
independent, naive search finds no engine ID outside an alias, a generic word or
one of the project's fixed words."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from leakworld import Case, cases, hidden_actor
from test_projection_leak_context import ENGINE, _named, _reply, _spec, count

from sidecar.context.contract import Accepted, Rejected
from sidecar.context.retry import retry_messages
from sidecar.errors import InvalidRequest
from sidecar.idsearch import searchable
from sidecar.llm.guard import check_request
from sidecar.projection import Projection
from sidecar.projection.projection import GENERIC_WORDS
from sidecar.prompts.fixed import FIXED_WORDS

PREFIXES = ["pc", "npc", "oc", "loc", "on", "tem", "item", "layer", "player", "faction", "thing", "c", "BP_Guard"]
WORDS = [
    "narrator", "Identity", "Involved", "somewhere", "something", "someone", "Situation", "characters",
    "instructions", "Location", "Relation", "Conditions", "remember", "goblin", "door", "Narrator", "IDENTITY",
]  # fmt: skip
realistic_id = st.one_of(
    st.tuples(st.sampled_from(PREFIXES), st.integers(1, 12)).map(lambda t: f"{t[0]}_{t[1]}"),
    st.sampled_from(WORDS),
)


def outside_masks(text: str, ids: set[str], masks: set[str]) -> list[str]:
    """Engine IDs (case folded) found in `text` outside every occurrence of a mask
    text, by plain string search: the rule of docs/privacy.md, written naively."""
    low = text.casefold()
    assert len(low) == len(text)  # these IDs and the prompt's other characters fold one to one
    found = []
    for eid in ids:
        if not searchable(eid):
            continue
        key = eid.casefold()
        start = low.find(key)
        while start != -1:
            end = start + len(key)
            alone = not key.isalpha() or (
                (start == 0 or not low[start - 1].isalpha()) and (end == len(low) or not low[end].isalpha())
            )
            masked = any(text[p : p + len(m)] == m for m in masks for p in range(max(0, end - len(m)), start + 1))
            if alone and not masked:
                found.append(f"{eid!r} at {start}: {text[max(0, start - 20) : end + 20]!r}")
            start = low.find(key, start + 1)
    return found


def sent_ok(case: Case, request: dict, prepared, view: Projection, said: set[str]) -> None:
    s = case.session
    check_request(request, prepared.engine_ids, moment=prepared.guard_moment, aliases=prepared.aliases)
    masks = set(s.aliases.by_alias) | GENERIC_WORDS | FIXED_WORDS
    ids = set(prepared.engine_ids)
    for m in request["messages"]:
        assert outside_masks(m["content"], ids, masks) == [], m["role"]
    for stop in request.get("stop", ()):
        assert outside_masks(stop, ids, masks) == []
    # Every alias the prompt shows as a word is one of an entity the actor perceives (or
    # perceived in an earlier turn): text the projection wrote was not matched again
    # (`npc_1` read as "n" + pc_1's alias).
    seen = {view.alias(e.id) for e in view.visible_entities()} | said
    for m in request["messages"]:
        shown = re.sub(r"\(such as \w+ or \w+\)", "", m["content"])  # the rules' example handles
        for word in re.findall(r"[A-Za-z]+_\d+", shown):
            if word in s.aliases.by_alias and word not in s.world.entities:
                assert word in seen, (m["role"], word, [ln for ln in shown.splitlines() if word in ln])


@pytest.mark.parametrize("kind", ["narrate", "dialogue", "decision", "describe"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(ids_from=realistic_id), seed=st.integers(0, 2**32))
def test_realistic_ids_never_block_a_run_and_never_reach_it(case: Case, kind: str, seed: int):
    rnd = random.Random(seed)
    s = case.session
    if hidden_actor(case):
        with pytest.raises(InvalidRequest):
            ENGINE.prepare(s, _spec(case, rnd, kind), count_tokens=count, budget_tokens=100_000)
        return
    said: set[str] = set()  # aliases a turn perceived: its transcript entries keep them
    replied = ""
    for _turn in range(2):  # the second turn reads the first reply (aliases) from the transcript
        spec = _spec(case, rnd, kind)
        prepared = ENGINE.prepare(s, spec, count_tokens=count, budget_tokens=100_000)
        if replied:
            # The model's words come back as it wrote them: its aliases were not searched for IDs.
            assert any(m["content"] == replied for m in prepared.prompt.messages if m["role"] == "assistant")
        stops = prepared.stop_sequences(tuple(f"{rnd.choice(sorted(s.world.entities))}:" for _ in range(3)))
        messages = prepared.prompt.messages
        view = Projection(s, spec.actor_id, named_ids=_named(spec, s))
        aliases = sorted(view.alias(e.id) for e in view.visible_entities())  # what a model could name
        for attempt in range(1, 4):
            sent_ok(case, {"messages": messages, "stop": list(stops)}, prepared, view, said)
            reply = _reply(rnd, aliases, spec, valid=attempt > 1)
            said.update(aliases)  # the transcript keeps this turn's words (the model's and the input's)
            verdict = prepared.evaluate(reply, attempt)
            if isinstance(verdict, Rejected):
                messages = retry_messages(ENGINE, prepared, verdict)
                continue
            assert isinstance(verdict, Accepted)
            prepared.record(reply, interrupted=False, run_id=spec.run_id)
            replied = reply
            break
