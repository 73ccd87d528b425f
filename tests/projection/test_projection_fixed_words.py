"""The project's own words (`sidecar.prompts.fixed.FIXED_WORDS`) are complete: the
leak guard does not take an engine ID for a leak where it stands as one of them
("## Identity", "Involved:"), so every word a prompt holds that the game did not
write must be listed there (or be a generic word the projection writes). Prompts
of every input kind and a decision retry, through the real context engine; a new
header or label fails here until listed."""

from __future__ import annotations

import random
import re

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from leakworld import Case, all_engine_ids, cases, hidden_actor
from test_projection_leak_context import ENGINE, _reply, _spec, count

from sidecar.context.contract import Rejected
from sidecar.context.retry import retry_messages
from sidecar.idsearch import MIN_WORD_ID_LENGTH
from sidecar.projection.projection import GENERIC_WORDS
from sidecar.prompts.fixed import FIXED_WORDS

_WORD = re.compile(r"[^\W\d_]+")


def long_words(text: str) -> set[str]:
    """The words an all-letter engine ID could be (shorter ones are never searched)."""
    return {w for w in _WORD.findall(text) if len(w) >= MIN_WORD_ID_LENGTH}


@pytest.mark.parametrize("kind", ["narrate", "dialogue", "decision", "describe"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(), seed=st.integers(0, 2**32))
def test_every_word_of_a_prompt_is_the_games_or_a_fixed_one(case: Case, kind: str, seed: int):
    rnd = random.Random(seed)
    s = case.session
    if hidden_actor(case):
        return
    spec = _spec(case, rnd, kind)
    prepared = ENGINE.prepare(s, spec, count_tokens=count, budget_tokens=100_000)
    # The game's words, also those an engine ID was glued to (the prompt shows them apart).
    data = msgspec.json.encode(s).decode() + msgspec.json.encode(spec).decode()
    ids = sorted(all_engine_ids(s), key=len, reverse=True)
    game = long_words(data) | long_words(re.sub("|".join(map(re.escape, ids)), " ", data))
    written = sorted(GENERIC_WORDS | set(s.aliases.by_alias), key=len, reverse=True)
    requests = [prepared.prompt.messages]
    aliases = sorted(s.aliases.by_alias)
    reply = _reply(rnd, aliases, spec, valid=False)
    game |= long_words(reply)  # the model's words come back in the retry
    verdict = prepared.evaluate(reply, 1)
    if isinstance(verdict, Rejected):
        requests.append(retry_messages(ENGINE, prepared, verdict))
    for messages in requests:
        for m in messages:
            # What the projection wrote (aliases, generic words) can be glued to game text
            # ("somethingsees"): set it apart.
            content = re.sub("|".join(map(re.escape, written)), " ", m["content"])
            unlisted = long_words(content) - game - FIXED_WORDS
            assert not unlisted, f"words in a {m['role']} message neither the game's nor in FIXED_WORDS: {unlisted}"
