"""Property: whatever the world and the input, no engine ID, tick, timeline or
hidden value reaches a request, and every alias maps back to a real engine ID.

Driven here by the minimal renderer of `minirender.render` (Projection output
only); test_projection_leak_context.py drives the real context engine."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from leakworld import Case, all_engine_ids, cases, hidden_actor
from minirender import render

from sidecar.errors import InvalidRequest
from sidecar.llm.guard import check_outgoing
from sidecar.projection import AliasRejected, Projection

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def assert_no_leak(case: Case, messages: list[dict[str, str]], projection: Projection) -> None:
    s = case.session
    exposed = s.options.expose_moment
    ids = all_engine_ids(s)
    for m in messages:
        text = m["content"]
        for eid in ids:
            assert eid not in text, f"engine ID leaked into {m['role']}"
        if not exposed.tick:
            assert str(case.moment.tick) not in text
        if not exposed.timeline:
            assert case.moment.timeline not in text
        if not exposed.calendar:
            assert case.moment.calendar not in text
        for value in case.hidden_values:
            assert value not in text, "hidden value leaked"
    # The guard agrees: no false negative above, no false positive here.
    check_outgoing(messages, projection.engine_ids, moment=projection.guard_moment(case.moment))


@SETTINGS
@given(case=cases())
def test_projected_prompt_never_leaks(case: Case):
    if hidden_actor(case):
        with pytest.raises(InvalidRequest):
            Projection(case.session, case.actor_id)
        return
    p = Projection(case.session, case.actor_id, named_ids=case.named)
    messages = render(p, case.input_text, case.moment)
    assert_no_leak(case, messages, p)


@pytest.mark.slow
@SETTINGS
@given(case=cases(), data=st.data())
def test_reverse_mapping_gives_real_visible_ids_or_rejects(case: Case, data):
    s = case.session
    if hidden_actor(case):
        return
    p = Projection(s, case.actor_id, named_ids=case.named)
    for e in p.visible_entities():
        assert p.resolve(p.alias(e.id)) == e.id
    prompt = "\n".join(m["content"] for m in render(p, case.input_text, case.moment))
    # What a model might answer with: words of the prompt, issued aliases, junk, engine IDs.
    candidates = data.draw(
        st.lists(
            st.one_of(
                st.sampled_from(re.findall(r"[\w ]+", prompt) or ["x"]),
                st.sampled_from(sorted(s.aliases.by_alias)),
                st.text(max_size=12),
                st.sampled_from(sorted(all_engine_ids(s))),
            ),
            min_size=1,
            max_size=10,
        )
    )
    for alias in candidates:
        try:
            eid = p.resolve(alias)
        except AliasRejected as err:
            for engine in all_engine_ids(s):
                assert engine not in err.reason
            continue
        assert eid in s.world.entities
        assert p.can_see(s.world.entities[eid])
        assert s.aliases.by_id[eid] == alias.strip()
